package recall

import "github.com/goagents/memorykit"

// Outcome says what recall did with one record a channel returned.
type Outcome string

// Outcomes. Every record any channel returned gets exactly one.
const (
	// Kept means the record is in Result.Entries.
	Kept Outcome = "kept"
	// DroppedItemBudget means the item budget was already used up.
	DroppedItemBudget Outcome = "item_budget"
	// DroppedTokenBudget means the entry did not fit the remaining token
	// budget.
	DroppedTokenBudget Outcome = "token_budget"
	// DroppedBelowThreshold means the record matched fewer than half as
	// many full-text terms as the best match (see storekit.FullTextRule)
	// and no other channel returned it.
	DroppedBelowThreshold Outcome = "below_full_text_threshold"
	// DroppedBelowVectorFloor means only the vector channel returned the
	// record, with a similarity below RecallPolicy.MinVectorSimilarity.
	DroppedBelowVectorFloor Outcome = "below_vector_floor"
	// DroppedChannelDegraded means only a degraded channel returned the
	// record, so its rank was not trusted.
	DroppedChannelDegraded Outcome = "channel_degraded"
	// DroppedDeadline means the recall deadline passed before the record
	// could be used.
	DroppedDeadline Outcome = "deadline"
	// DroppedNotEffective means the record's effective window closed while
	// recall ran (between the store's snapshot and the engine's check).
	DroppedNotEffective Outcome = "not_effective"
)

// TraceRecord is one record's path through recall. It is content-free.
type TraceRecord struct {
	// ID is the record ID.
	ID string
	// Ranks holds the 1-based rank in each channel that returned the
	// record, degraded channels included. A full-text match below the
	// threshold is not listed here; see BelowThresholdRank.
	Ranks map[memorykit.Channel]int
	// BelowThresholdRank is the record's rank among the full-text matches
	// dropped by the threshold, or 0.
	BelowThresholdRank int
	// Score is the fused RRF score over the channels that were used, or 0
	// when the record was not fused.
	Score float64
	// Outcome says whether the record was kept, and if not, why.
	Outcome Outcome
	// Truncated reports that a kept entry's content or key was cut to
	// MaxEntryRunes.
	Truncated bool
	// Tokens is the entry's cost as measured by the request's cost
	// function, when it was measured.
	Tokens int
}

// ChannelTrace describes one channel of one recall.
type ChannelTrace struct {
	Channel memorykit.Channel
	// Hits is how many records the channel returned (for full-text, the
	// kept matches; see Trace.BelowThreshold).
	Hits int
	// Skipped reports that the channel was not asked (no terms, no keys or
	// a blank query).
	Skipped bool
	// Degraded reports that the channel failed recoverably and was dropped.
	Degraded bool
	// Reason is a reason code when Degraded.
	Reason string
}

// Trace is the content-free account of one recall, for the Host: per record
// ID its rank in each channel, the fused score and the outcome. It covers
// every record any channel returned.
type Trace struct {
	// PolicyVersion is the RecallPolicy version in force.
	PolicyVersion int
	// TermsVersion is the storekit.TermsVersion the query's full-text
	// terms were made under.
	TermsVersion int
	// QueryRunes is the length of the query actually used, in runes;
	// QueryCut reports that a longer query was cut to its last
	// MaxQueryRunes runes.
	QueryRunes int
	QueryCut   bool
	// Terms and ExactKeys count the full-text terms and exact keys asked.
	Terms     int
	ExactKeys int
	// Channels describes the three channels, in the order exact,
	// full-text, vector.
	Channels []ChannelTrace
	// BelowThreshold counts full-text matches dropped by the threshold.
	BelowThreshold int
	// Records lists every record any channel returned, in fused order,
	// followed by those no used channel ranked.
	Records []TraceRecord
	// Degraded reports that recall as a whole degraded and returned no
	// memory; Reason is its reason code ("store_unavailable", "deadline").
	Degraded bool
	Reason   string
	// Items and Tokens are what was kept; TokenBudget is the token budget
	// the entries had (the caps' MaxTokens minus the caller's reserve).
	Items       int
	Tokens      int
	TokenBudget int
}

// Record returns the trace of one record ID.
func (t Trace) Record(id string) (TraceRecord, bool) {
	for _, r := range t.Records {
		if r.ID == id {
			return r, true
		}
	}
	return TraceRecord{}, false
}

// Channel returns the trace of one channel.
func (t Trace) Channel(c memorykit.Channel) (ChannelTrace, bool) {
	for _, ch := range t.Channels {
		if ch.Channel == c {
			return ch, true
		}
	}
	return ChannelTrace{}, false
}

// Count reports how many traced records have outcome o.
func (t Trace) Count(o Outcome) int {
	n := 0
	for _, r := range t.Records {
		if r.Outcome == o {
			n++
		}
	}
	return n
}

func (t *Trace) channel(c memorykit.Channel) *ChannelTrace {
	for i := range t.Channels {
		if t.Channels[i].Channel == c {
			return &t.Channels[i]
		}
	}
	t.Channels = append(t.Channels, ChannelTrace{Channel: c})
	return &t.Channels[len(t.Channels)-1]
}
