package storekit

import (
	"strconv"
	"time"
)

// BatchItemError returns err with the item's position prefixed to its
// field, so a caller can tell which item of a batch was rejected. Errors
// that are not *memorykit.Error values are returned unchanged.
func BatchItemError(i int, err error) error {
	return PrefixField("", "items["+strconv.Itoa(i)+"]", err)
}

// BatchItemTime is the instant a BatchCreator stamps on item i of an n-item
// batch applied at now: now - (n-1-i) microseconds. The last item gets now
// and each earlier item one microsecond less, so the items of one batch
// have distinct, increasing CreatedAt, UpdatedAt and (when not given)
// EffectiveFrom in item order, "newer" is well defined inside a batch, and
// recall's recency tie order (see FuseRRFAt) follows the order
// the caller gave, on every run. Stamping backwards keeps every item
// effective at now, so a batch is recallable at once, exactly as n single
// creates would be. Both stores use it, and times are kept to the
// microsecond.
func BatchItemTime(now time.Time, i, n int) time.Time {
	if i < 0 || i >= n {
		return now
	}
	return now.Add(-time.Duration(n-1-i) * time.Microsecond)
}
