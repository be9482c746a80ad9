package memorytools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"go.uber.org/zap"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/embedder"
	"github.com/goagents/memorykit/memorystore"
	"github.com/goagents/memorykit/memorytools"
	"github.com/goagents/memorykit/recall"
	"github.com/goagents/memorykit/writer"
)

// projectACL is the example Host's authorizer: explicit grants per actor
// and Scope, everything else denied.
type projectACL map[string]bool

func (a projectACL) Authorize(_ context.Context, p memorykit.Principal, perm memorykit.Permission, s memorykit.Scope) error {
	if a[p.Actor.ID+"|"+s.String()+"|"+string(perm)] {
		return nil
	}
	return fmt.Errorf("denied")
}

// rejectSecrets is the example's content policy.
type rejectSecrets struct{}

func (rejectSecrets) ValidateContent(_ context.Context, c memorykit.ContentCheck) error {
	if len(c.Content) >= 7 && c.Content[:7] == "sk-live" {
		return fmt.Errorf("looks like a secret")
	}
	return nil
}

func Example() {
	ctx := context.Background()
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	guard, _ := memorykit.NewWriteGuard(memorykit.LimitsV1(), rejectSecrets{})
	tombstones, _ := memorykit.NewTombstoneKeyer([]byte("example tombstone secret: load yours from a secret store"))
	store, _ := memorystore.New(memorystore.Config{Clock: clk, Guard: guard, Tombstones: tombstones})

	// From the Host's trusted metadata: tenant, project route, the
	// authenticated caller, the model's actor, and whether this request
	// carries write intent.
	scope, _ := memorykit.ProjectScope("acme", "billing-api")
	caller := memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorUser, ID: "dana"}}
	model := memorykit.Principal{TenantID: "acme", Actor: memorykit.Actor{Kind: memorykit.ActorModel, ID: "assistant-1"}}
	acl := projectACL{
		"dana|" + scope.String() + "|read":               true,
		"dana|" + scope.String() + "|write":              true,
		"assistant-1|" + scope.String() + "|read":        true,
		"assistant-1|" + scope.String() + "|model_write": true,
	}

	engine, _ := recall.New(recall.Config{
		Store: store, Embedder: embedder.NewLocal(), Authorizer: acl,
		Policy: memorykit.RecallPolicyV1(embedder.LocalProfile, embedder.LocalDimension),
		Clock:  clk, Events: memorykit.DiscardEvents{}, Logger: zap.NewNop(),
	})
	wr, _ := writer.New(writer.Config{Store: store, Authorizer: acl, Events: memorykit.DiscardEvents{}, Clock: clk})

	tools, err := memorytools.New(memorytools.Config{
		Engine: engine, Records: store, Authorizer: acl, Writer: wr,
		Principal: model, Caller: caller, Scope: scope, WriteIntent: true,
		Limits: memorytools.LimitsV1(),
		Events: memorykit.DiscardEvents{}, Clock: clk, Logger: zap.NewNop(),
	})
	if err != nil {
		panic(err)
	}
	for _, tl := range tools.Tools() {
		fmt.Println("tool:", tl.Name)
	}

	run := func(name, args string) memorytools.Result {
		res, err := tools.Call(ctx, name, json.RawMessage(args))
		if err != nil {
			panic(err)
		}
		return res
	}
	status := func(res memorytools.Result) string {
		var out struct{ Status string }
		_ = json.Unmarshal([]byte(res.Content), &out)
		return out.Status
	}

	fmt.Println("remember:", status(run(memorytools.RememberProjectMemory, `{"kind":"fact","key":"deploy region","content":"eu-west-1"}`)))
	failed := run(memorytools.RememberProjectMemory, `{"kind":"fact","key":"stripe key","content":"sk-live-123"}`)
	fmt.Println("remember:", failed.Content, failed.IsError)
	fmt.Println("scope field:", run(memorytools.SearchMemory, `{"query":"region","tenant_id":"other"}`).Content)

	var found struct {
		Memories []struct{ Key, Content string }
	}
	_ = json.Unmarshal([]byte(run(memorytools.SearchMemory, `{"query":"deploy region"}`).Content), &found)
	fmt.Printf("search: %s = %s\n", found.Memories[0].Key, found.Memories[0].Content)

	fmt.Println("failed flag:", tools.Failed())
	fmt.Println("validate claim:", tools.ValidateOutput("Done, I saved the Stripe key."))
	fmt.Println("validate truth:", tools.ValidateOutput("The Stripe key was not saved."))
	// Output:
	// tool: search_memory
	// tool: read_memory
	// tool: remember_project_memory
	// remember: saved
	// remember: 项目记忆未保存 true
	// scope field: invalid arguments: unknown_field
	// search: deploy region = eu-west-1
	// failed flag: true
	// validate claim: 项目记忆未保存
	// validate truth: <nil>
}
