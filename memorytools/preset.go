package memorytools

// LimitsV1 returns the memory tools' bounds, version 1: at most 5 memories
// per search, about 800 estimated tokens per result, 500 runes per entry
// and 8 KiB of argument JSON per call. Every field is set explicitly and
// the result passes Validate; a Host may copy it and change any bound.
// Different numbers need a new preset version, not an edit of this one.
func LimitsV1() Limits {
	return Limits{MaxResults: 5, MaxResultTokens: 800, MaxEntryRunes: 500, MaxArgBytes: 8192}
}
