// Package bench holds the deterministic synthetic data behind memorykit's
// cross-store benchmarks: a generator of project-memory records and recall
// queries at any scale, and a recall-quality set built from multi-session
// conversations in English and Chinese.
//
// The benchmarks themselves live in this package's _test files and only run
// under go test -bench; see docs/benchmarks.md for how to reproduce them and
// for the measured results.
package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/goagents/memorykit"
)

// Doc is one synthetic memory record.
type Doc struct {
	Kind    memorykit.Kind
	Key     string
	Content string
	// Entity and Topic are what the record is about; QueryText uses them to
	// ask a question the record answers.
	Entity string
	Topic  string
	// Chinese is true for a record written in Chinese.
	Chinese bool
}

// Generator produces synthetic project memory deterministically: the same
// seed always yields the same records and queries.
type Generator struct {
	r        *rand.Rand
	entities []string
	zipf     *rand.Zipf
}

// NewGenerator returns a generator seeded with seed.
func NewGenerator(seed uint64) *Generator {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ents := entityNames(4000)
	return &Generator{r: r, entities: ents, zipf: rand.NewZipf(r, 1.2, 4, uint64(len(ents)-1))}
}

// entityNames builds n distinct pseudo-words ("korami", "velstun"...) that
// play the part of the services, people and projects a team talks about.
// They are rare terms, unlike the shared English and Chinese vocabulary.
func entityNames(n int) []string {
	onsets := []string{"b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "kl", "st", "tr", "gr"}
	vowels := []string{"a", "e", "i", "o", "u", "ai", "ou"}
	codas := []string{"", "", "n", "r", "l", "s", "x"}
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	r := rand.New(rand.NewPCG(7, 11))
	for len(out) < n {
		syl := 2 + r.IntN(2)
		var b strings.Builder
		for i := 0; i < syl; i++ {
			b.WriteString(onsets[r.IntN(len(onsets))])
			b.WriteString(vowels[r.IntN(len(vowels))])
		}
		b.WriteString(codas[r.IntN(len(codas))])
		w := b.String()
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

func (g *Generator) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

// entity draws an entity name, popular ones more often.
func (g *Generator) entity() string { return g.entities[g.zipf.Uint64()] }

var (
	enTopics = []string{"database", "cache", "queue", "backup", "deployment", "dashboard", "runbook", "budget",
		"certificate", "pipeline", "cluster", "gateway", "scheduler", "index", "bucket", "webhook", "release",
		"migration", "rollout", "alert", "quota", "replica", "token", "schema", "service", "frontend", "worker",
		"storage", "network", "firewall", "load balancer", "search", "billing", "invoice", "report", "contract"}
	enPlaces  = []string{"eu-west-1", "us-east-2", "the Frankfurt region", "the Tokyo region", "the shared vault", "the ops wiki", "the main repository", "cold storage", "the staging cluster", "the analytics warehouse"}
	enTeams   = []string{"platform", "payments", "growth", "security", "data", "mobile", "support", "infrastructure"}
	enPeriods = []string{"week", "month", "quarter", "sprint", "day", "release"}
	enTechs   = []string{"PostgreSQL", "Redis", "Kafka", "RabbitMQ", "MySQL", "Elasticsearch", "S3", "GCS", "Nomad", "Kubernetes", "Terraform", "Ansible"}
	enAdjs    = []string{"slow", "expensive", "fragile", "noisy", "large", "risky", "stable", "fast", "cheap", "quiet"}
	enEvents  = []string{"the last incident", "peak traffic", "the holiday freeze", "the audit", "the launch", "the migration weekend"}
	enMetrics = []string{"latency", "error rate", "queue depth", "disk usage", "CPU", "memory", "throughput"}
	enFillers = []string{
		"This was agreed in the planning meeting and should not change without a review.",
		"Please keep this in mind when you touch the related code or the deployment scripts.",
		"If anything here looks wrong, ask in the team channel before you change it.",
		"It is documented in the wiki as well, but this is the version we actually follow.",
		"The previous setup caused a lot of pages at night, which is why we changed it.",
		"Nobody should rely on the old behaviour any more; it was removed last month.",
		"We will revisit this decision after the next quarterly review of the costs.",
		"The on-call engineer is expected to know this before taking over the rotation.",
	}
	zhTopics = []string{"数据库", "缓存", "队列", "备份", "部署", "监控", "告警", "预算", "证书", "流水线", "集群",
		"网关", "调度", "索引", "存储", "发布", "迁移", "配额", "副本", "报表", "合同", "账单"}
	zhPlaces  = []string{"法兰克福机房", "东京机房", "上海机房", "共享保险库", "运维文档", "主仓库", "冷存储", "测试集群"}
	zhTeams   = []string{"平台", "支付", "增长", "安全", "数据", "移动端", "客服", "基础设施"}
	zhPeriods = []string{"每周", "每月", "每季度", "每个迭代", "每天"}
	zhAdjs    = []string{"太慢", "太贵", "不稳定", "太吵", "太大", "风险太高"}
	zhFillers = []string{
		"这是在规划会议上定下来的，修改之前需要先评审。",
		"改动相关代码或者部署脚本时请记住这一点。",
		"如果发现这里有错误，请先在团队频道里确认。",
		"值班工程师接班之前应该了解这些内容。",
		"下个季度复盘成本时我们会重新讨论这个决定。",
	}
)

// fillers returns two different filler sentences joined by sep.
func (g *Generator) fillers(xs []string, sep string) string {
	i := g.r.IntN(len(xs))
	j := (i + 1 + g.r.IntN(len(xs)-1)) % len(xs)
	return xs[i] + sep + xs[j]
}

// Doc returns the i-th record of a scope. Keys embed i, so the records of
// one scope never supersede each other.
func (g *Generator) Doc(i int) Doc {
	ent := g.entity()
	if g.r.IntN(5) == 0 {
		return g.zhDoc(i, ent)
	}
	topic := g.pick(enTopics)
	var content string
	var kind memorykit.Kind
	switch g.r.IntN(5) {
	case 0:
		kind = memorykit.KindFact
		content = fmt.Sprintf("The %s %s lives in %s and the %s team reviews it every %s.",
			ent, topic, g.pick(enPlaces), g.pick(enTeams), g.pick(enPeriods))
	case 1:
		kind = memorykit.KindDecision
		content = fmt.Sprintf("We decided to move the %s %s from %s to %s because it was %s during %s.",
			ent, topic, g.pick(enTechs), g.pick(enTechs), g.pick(enAdjs), g.pick(enEvents))
	case 2:
		kind = memorykit.KindProcedure
		content = fmt.Sprintf("To restart %s, drain the %s first, then run the %s job and watch the %s %s graph.",
			ent, topic, g.entity(), g.pick(enMetrics), g.pick(enTopics))
	case 3:
		kind = memorykit.KindPreference
		content = fmt.Sprintf("%s prefers %s %s for %s and wants the %s kept under %d %s.",
			strings.ToUpper(ent[:1])+ent[1:], g.pick(enAdjs), topic, g.entity(), g.pick(enMetrics), 10+g.r.IntN(990),
			g.pick([]string{"ms", "GB", "percent", "requests per second", "dollars"}))
	default:
		kind = memorykit.KindNote
		content = fmt.Sprintf("Note that the %s %s uses port %d in staging and version %d.%d.%d in production.",
			ent, topic, 1024+g.r.IntN(60000), g.r.IntN(5), g.r.IntN(20), g.r.IntN(10))
	}
	content += " " + g.fillers(enFillers, " ")
	return Doc{Kind: kind, Key: fmt.Sprintf("%s %s %d", ent, topic, i), Content: content, Entity: ent, Topic: topic}
}

func (g *Generator) zhDoc(i int, ent string) Doc {
	topic := g.pick(zhTopics)
	var content string
	kind := memorykit.KindFact
	switch g.r.IntN(3) {
	case 0:
		content = fmt.Sprintf("%s的%s放在%s，由%s团队%s检查一次。", ent, topic, g.pick(zhPlaces), g.pick(zhTeams), g.pick(zhPeriods))
	case 1:
		kind = memorykit.KindDecision
		content = fmt.Sprintf("我们决定把%s的%s从%s迁移到%s，因为原来的方案%s。", ent, topic, g.pick(enTechs), g.pick(enTechs), g.pick(zhAdjs))
	default:
		kind = memorykit.KindProcedure
		content = fmt.Sprintf("重启%s之前，先清空%s，再运行%s任务，最后检查%s的%s。", ent, topic, g.entity(), g.pick(zhTopics), g.pick(zhPlaces))
	}
	content += g.fillers(zhFillers, "")
	return Doc{Kind: kind, Key: fmt.Sprintf("%s %s %d", ent, topic, i), Content: content, Entity: ent, Topic: topic, Chinese: true}
}

// QueryText returns a question a user might ask about d: its entity and
// topic wrapped in question words, in d's language.
func (g *Generator) QueryText(d Doc) string {
	if d.Chinese {
		f := g.pick([]string{"%s的%s在哪里？", "%s的%s是怎么安排的", "我们对%s的%s做了什么决定？", "请告诉我%s的%s情况"})
		return fmt.Sprintf(f, d.Entity, d.Topic)
	}
	f := g.pick([]string{
		"where is the %s %s kept?", "what did we decide about the %s %s?", "how do we handle the %s %s",
		"remind me what the team said about %s and the %s", "what is the current setup of the %s %s?",
	})
	return fmt.Sprintf(f, d.Entity, d.Topic)
}
