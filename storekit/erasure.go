package storekit

import (
	"sort"
	"strings"

	"github.com/goagents/memorykit"
)

// PurgeAllKeys is the erased-key mark of a job whose every proposal is
// dropped at hand-back (a purge scrubbed it). It never equals a key digest.
const PurgeAllKeys = "*"

// PurgingError returns the recoverable memorykit.ErrPurging error stores
// give a write to a Scope under purge.
func PurgingError(op string) error {
	return &memorykit.Error{Op: op, Kind: memorykit.ErrPurging, Reason: "purging", Retry: true}
}

// ScrubReason is what erase keeps of a revision's reason: the reason when
// it is a reason code (CheckReasonCode), else the empty string.
// Free-text reasons may quote the memory itself, so they do not survive
// erase.
func ScrubReason(reason string) string {
	if reason != "" && CheckReasonCode("", reason) == nil {
		return reason
	}
	return ""
}

// ErasureJobIDs returns the extraction jobs an erase of rec must scrub,
// sorted and without repeats: the job of every unit of Host work a source
// of the record or of any of its revisions refers to
// (ExtractionJobID(scope, source.Ref)), and the job that
// proposed the record, read from its creating revision
// (ExtractionCandidateReason). revs are the record's revisions
// before erase.
func ErasureJobIDs(rec memorykit.Record, revs []Revision) []string {
	prefix := ExtractionCandidateReason("")
	set := make(map[string]bool)
	add := func(src []memorykit.Source) {
		for _, s := range src {
			if s.Ref != "" {
				set[ExtractionJobID(rec.Scope, s.Ref)] = true
			}
		}
	}
	add(rec.Sources)
	for _, v := range revs {
		add(v.Sources)
		if v.Action == memorykit.ActionCreate && strings.HasPrefix(v.Reason, prefix) {
			if id := v.Reason[len(prefix):]; ValidateID("", "job", id) == nil {
				set[id] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for id := range set {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// DropErasedProposals returns the candidates of a job completion that may
// still be stored after erase scrubbed the job: erasedKeys are the key
// digests erase recorded on the job (PurgeAllKeys drops every
// candidate).
func DropErasedProposals(k *memorykit.TombstoneKeyer, scope memorykit.Scope, erasedKeys []string, in []memorykit.NewRecord) []memorykit.NewRecord {
	if len(erasedKeys) == 0 {
		return in
	}
	drop := make(map[string]bool, len(erasedKeys))
	for _, d := range erasedKeys {
		if d == PurgeAllKeys {
			return nil
		}
		drop[d] = true
	}
	out := make([]memorykit.NewRecord, 0, len(in))
	for _, c := range in {
		if !drop[k.Digest(scope, NormalizeKey(c.Key))] {
			out = append(out, c)
		}
	}
	return out
}

// ErasedTexts returns what an erase of rec removes that a job's payload
// may quote, lower-cased, without repeats or empty strings: the record's
// key and the content of the record and of every revision. revs are the
// record's revisions before erase. See PayloadQuotes.
func ErasedTexts(rec memorykit.Record, revs []Revision) []string {
	set := map[string]bool{}
	add := func(s string) {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			set[s] = true
		}
	}
	add(rec.Key)
	add(rec.Content)
	for _, v := range revs {
		add(v.Content)
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// PayloadQuotes reports whether payload holds any of texts (ErasedTexts),
// ignoring case: such an unfinished job is finished by erase as a failed
// tombstone with reason ReasonErasedContent, so the text does
// not outlive the erase in the job until a worker runs it.
func PayloadQuotes(payload string, texts []string) bool {
	if payload == "" || len(texts) == 0 {
		return false
	}
	p := strings.ToLower(payload)
	for _, t := range texts {
		if strings.Contains(p, t) {
			return true
		}
	}
	return false
}
