package pgstore

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/pgvector/pgvector-go"

	"github.com/goagents/memorykit"
	"github.com/goagents/memorykit/storekit"
)

var (
	_ storekit.BatchCreator         = (*Store)(nil)
	_ storekit.EmbeddingBatchPutter = (*Store)(nil)
)

// batchRow is one validated batch item with everything the statements need.
type batchRow struct {
	in        memorykit.NewRecord
	meta, src any
	terms     pgtype.TSVector // search_tsv
	emb       *storekit.BatchEmbedding
	rec       memorykit.Record // the record as the batch leaves it
	// superseder is the index of the later item that supersedes this one
	// inside the batch, or -1.
	superseder int
}

// CreateBatch implements storekit.BatchCreator in one transaction: the
// items are validated as Create validates them, then the transaction takes
// the key locks of every active item (in lock-key order, so two batches
// cannot deadlock), reads and locks the records currently holding those
// keys, checks IDs and expectations in item order, supersedes the
// pre-existing holders with one UPDATE and writes the records, their
// revisions and their embeddings with COPY. The records trigger (migration
// 0002) updates the recall layout once per statement.
func (s *Store) CreateBatch(ctx context.Context, items []storekit.BatchItem) ([]memorykit.Record, error) {
	const op = "pgstore.create_batch"
	if err := live(ctx, op); err != nil {
		return nil, err
	}
	rows, err := s.checkBatchItems(ctx, op, items)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return []memorykit.Record{}, nil
	}
	now := s.now()
	err = s.inTx(ctx, op, func(tx pgx.Tx) error {
		return s.writeBatch(ctx, tx, op, rows, now, asItem)
	})
	if err != nil {
		return nil, err
	}
	s.wrote(distinctScopes(len(rows), func(i int) (memorykit.Scope, bool) { return rows[i].in.Scope, true })...)
	out := make([]memorykit.Record, len(rows))
	for i, r := range rows {
		out[i] = r.rec.Clone()
	}
	return out, nil
}

// checkBatchItems validates the batch as Create would (the WriteGuard's
// CheckBatch, with pgvector's dimension bound), before any database work,
// and prepares each item's statement values.
func (s *Store) checkBatchItems(ctx context.Context, op string, items []storekit.BatchItem) ([]batchRow, error) {
	checked, err := storekit.CheckBatch(ctx, s.guard, op, items, maxDims)
	if err != nil {
		return nil, err
	}
	rows := make([]batchRow, len(checked))
	var tags scopeTags
	for i, in := range checked {
		r := batchRow{in: in, superseder: -1}
		if r.meta, err = encodeMetadata(in.Metadata); err != nil {
			return nil, storekit.BatchItemError(i, memorykit.WrapError(op, memorykit.ErrInvalidInput, "metadata_encoding", err))
		}
		if r.src, err = encodeSources(in.Sources); err != nil {
			return nil, storekit.BatchItemError(i, memorykit.WrapError(op, memorykit.ErrInvalidInput, "sources_encoding", err))
		}
		if emb := items[i].Embedding; emb != nil {
			r.emb = &storekit.BatchEmbedding{Profile: emb.Profile, Vector: append([]float32(nil), emb.Vector...)}
		}
		r.terms = termsValue(tags.of(in.Scope), storekit.IndexTerms(in.Key, in.Content))
		rows[i] = r
	}
	return rows, nil
}

// termsValue is the search_tsv of a record of the Scope tagged tag
// (scopeTag) with the given index terms (already distinct and non-empty):
// the lexemes ftsTerms makes, each stored verbatim (as array_to_tsvector
// would store it), built in one string rather than one per lexeme, and
// sent in binary: COPY then neither quotes the lexemes nor parses them
// back, which a text value costs on both sides. The server sorts the
// lexemes into its own order.
func termsValue(tag string, terms []string) pgtype.TSVector {
	v := pgtype.TSVector{Lexemes: make([]pgtype.TSVectorLexeme, len(terms)), Valid: true}
	n := 0
	for _, t := range terms {
		n += len(tag) + len(t) // a surrogate (ftsTerm) is shorter than its term
	}
	var b strings.Builder
	b.Grow(n)
	ends := make([]int, len(terms))
	for i, t := range terms {
		b.WriteString(tag)
		b.WriteString(ftsTerm(t))
		ends[i] = b.Len()
	}
	all, start := b.String(), 0
	for i, end := range ends {
		v.Lexemes[i].Word = all[start:end]
		start = end
	}
	return v
}

// scopeTags remembers the tag of the last Scope asked for: a batch
// usually writes to one Scope, and the tag is an md5.
type scopeTags struct {
	scope memorykit.Scope
	tag   string
}

func (c *scopeTags) of(scope memorykit.Scope) string {
	if c.tag == "" || c.scope != scope {
		c.scope, c.tag = scope, scopeTag(scope)
	}
	return c.tag
}

// batchHolder is the active record of a Scope/kind/key while the batch is
// planned: one that existed before (item -1) or an item of the batch.
type batchHolder struct {
	id      string
	version int64
	item    int
}

// activeKey is the Scope, kind and key an active record holds.
type activeKey struct {
	scope memorykit.Scope
	kind  memorykit.Kind
	key   string
}

// itemErr attributes an error to item i of a write: BatchItemError for
// CreateBatch, the error itself for Create (a batch of one).
type itemErr func(i int, err error) error

// asItem marks err with the item's position (CreateBatch).
func asItem(i int, err error) error { return storekit.BatchItemError(i, err) }

// asIs leaves err as it is (Create).
func asIs(_ int, err error) error { return err }

// writeBatch stores rows in tx, in phases: hold the Scopes (purge lock),
// refuse taken IDs, fix each item's times and record, lock the keys of the
// active items and read their holders, check expectations and plan who
// supersedes whom, supersede the earlier holders, then copy the records,
// revisions and embeddings in.
func (s *Store) writeBatch(ctx context.Context, tx pgx.Tx, op string, rows []batchRow, now time.Time, ie itemErr) error {
	if err := s.holdBatchScopes(ctx, tx, op, rows); err != nil {
		return err
	}
	if err := s.refuseTakenIDs(ctx, tx, op, rows, ie); err != nil {
		return err
	}
	if err := planRecords(op, rows, now, ie); err != nil {
		return err
	}
	holders, err := s.lockActiveKeys(ctx, tx, rows)
	if err != nil {
		return err
	}
	sup, err := s.planSupersedes(ctx, tx, op, rows, holders, ie)
	if err != nil {
		return err
	}
	if len(sup.id) > 0 {
		if _, err := tx.Exec(ctx, s.stmt("batch_supersede"), sup.id, sup.kind, sup.actor, sup.reason, sup.at); err != nil {
			return err
		}
	}
	return s.copyBatch(ctx, tx, op, rows)
}

// holdBatchScopes takes the purge lock of every Scope of the batch, in
// Scope order.
func (s *Store) holdBatchScopes(ctx context.Context, tx pgx.Tx, op string, rows []batchRow) error {
	scopes := make(map[memorykit.Scope]bool)
	var order []memorykit.Scope
	for _, r := range rows {
		if !scopes[r.in.Scope] {
			scopes[r.in.Scope] = true
			order = append(order, r.in.Scope)
		}
	}
	sort.Slice(order, func(i, k int) bool { return order[i].String() < order[k].String() })
	for _, sc := range order {
		if err := s.holdScope(ctx, tx, op, sc); err != nil {
			return err
		}
	}
	return nil
}

// refuseTakenIDs fails on the first item whose given ID a record (in any
// Scope) already has.
func (s *Store) refuseTakenIDs(ctx context.Context, tx pgx.Tx, op string, rows []batchRow, ie itemErr) error {
	var given []string
	for _, r := range rows {
		if r.in.ID != "" {
			given = append(given, r.in.ID)
		}
	}
	if len(given) == 0 {
		return nil
	}
	res, err := tx.Query(ctx, s.stmt("batch_taken_ids"), given)
	if err != nil {
		return err
	}
	taken, err := pgx.CollectRows(res, pgx.RowTo[string])
	if err != nil {
		return err
	}
	isTaken := make(map[string]bool, len(taken))
	for _, id := range taken {
		isTaken[id] = true
	}
	for i, r := range rows {
		if isTaken[r.in.ID] {
			return ie(i, memorykit.NewError(op, memorykit.ErrAlreadyExists, "id_taken"))
		}
	}
	return nil
}

// planRecords gives every item its ID (generated when not given), its
// instant (storekit.BatchItemTime), its effective window (refusing an end
// not after the start) and the record as the batch stores it.
func planRecords(op string, rows []batchRow, now time.Time, ie itemErr) error {
	for i := range rows {
		r := &rows[i]
		at := storekit.BatchItemTime(now, i, len(rows))
		if r.in.ID == "" {
			r.in.ID = storekit.NewRecordID(now)
		}
		from := pgTime(r.in.EffectiveFrom)
		if r.in.EffectiveFrom.IsZero() {
			from = at
		}
		var until time.Time
		if !r.in.EffectiveUntil.IsZero() {
			until = pgTime(r.in.EffectiveUntil)
			if !until.After(from) {
				return ie(i, memorykit.FieldError(op, "effective_until", "not_after_effective_from"))
			}
		}
		r.rec = memorykit.Record{
			ID: r.in.ID, Scope: r.in.Scope, Kind: r.in.Kind, Key: r.in.Key, Content: r.in.Content,
			Metadata: cloneStrings(r.in.Metadata), Sources: cloneSources(r.in.Sources), Status: r.in.Status,
			Version: 1, ContentHash: storekit.ContentHash(r.in.Content), EffectiveFrom: from, EffectiveUntil: until,
			CreatedBy: r.in.Actor, TouchedBy: r.in.Actor, CreatedAt: at, UpdatedAt: at,
		}
	}
	return nil
}

// lockActiveKeys takes the key lock of every key an active item takes,
// in lock-key order (so two batches cannot deadlock), then locks and
// returns the records holding those keys now.
func (s *Store) lockActiveKeys(ctx context.Context, tx pgx.Tx, rows []batchRow) (map[activeKey]*batchHolder, error) {
	keys := map[activeKey]bool{}
	var locks []int64
	for _, r := range rows {
		if r.in.Status == memorykit.StatusActive {
			k := activeKey{r.in.Scope, r.in.Kind, r.in.Key}
			if !keys[k] {
				keys[k] = true
				locks = append(locks, s.keyLock(k.scope, k.key))
			}
		}
	}
	holders := map[activeKey]*batchHolder{}
	if len(locks) == 0 {
		return holders, nil
	}
	sort.Slice(locks, func(i, j int) bool { return locks[i] < locks[j] })
	var tenants, types, subjects, kinds, ks []string
	for k := range keys {
		tenants = append(tenants, k.scope.TenantID)
		types = append(types, string(k.scope.SubjectType))
		subjects = append(subjects, k.scope.SubjectID)
		kinds = append(kinds, string(k.kind))
		ks = append(ks, k.key)
	}
	// The locks, then the read, in one round trip: the server runs them in
	// order, so the read sees the holders as they are once it holds every
	// lock.
	batch := &pgx.Batch{}
	batch.Queue(`SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k ORDER BY k`, locks)
	reads := 1
	if s.distributed {
		// One statement per tenant, in tenant order (the row locks of a
		// tenant are taken in ID order by each).
		reads = 0
		for _, t := range sortedUnique(tenants) {
			batch.Queue(s.stmt("batch_active_holders_in"), tenants, types, subjects, kinds, ks, t)
			reads++
		}
	} else {
		batch.Queue(s.stmt("batch_active_holders"), tenants, types, subjects, kinds, ks)
	}
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	for range reads {
		if err := readHolders(br, holders); err != nil {
			return nil, err
		}
	}
	return holders, br.Close()
}

// readHolders reads the next batch_active_holders result of br into
// holders.
func readHolders(br pgx.BatchResults, holders map[activeKey]*batchHolder) error {
	res, err := br.Query()
	if err != nil {
		return err
	}
	defer res.Close()
	for res.Next() {
		var (
			h          batchHolder
			k          activeKey
			st, kindSt string
		)
		if err := res.Scan(&h.id, &h.version, &k.scope.TenantID, &st, &k.scope.SubjectID, &kindSt, &k.key); err != nil {
			return err
		}
		k.scope.SubjectType, k.kind, h.item = memorykit.SubjectType(st), memorykit.Kind(kindSt), -1
		holders[k] = &h
	}
	res.Close()
	return res.Err()
}

// supersedes are the earlier holders an UPDATE supersedes, with the
// actor, reason and instant of the item that replaces each.
type supersedes struct {
	id, kind, actor, reason []string
	at                      []time.Time
}

// planSupersedes applies the active items in order on the plan: each
// one's expectation (and KeyOwner condition, which only Create carries) is
// checked against the key's holder at that point; a holder from before
// the batch goes into the returned supersedes, a holder of the batch is
// marked superseded in place.
func (s *Store) planSupersedes(ctx context.Context, tx pgx.Tx, op string, rows []batchRow, holders map[activeKey]*batchHolder, ie itemErr) (supersedes, error) {
	var sup supersedes
	for i := range rows {
		r := &rows[i]
		if r.in.Status != memorykit.StatusActive {
			continue
		}
		k := activeKey{r.in.Scope, r.in.Kind, r.in.Key}
		h := holders[k]
		if err := s.checkExpect(ctx, tx, op, r.in, h); err != nil {
			return supersedes{}, ie(i, err)
		}
		if h != nil {
			if h.item < 0 {
				sup.id = append(sup.id, h.id)
				sup.kind = append(sup.kind, string(r.in.Actor.Kind))
				sup.actor = append(sup.actor, r.in.Actor.ID)
				sup.reason = append(sup.reason, r.in.Reason)
				sup.at = append(sup.at, r.rec.CreatedAt)
			} else {
				prev := &rows[h.item]
				prev.superseder = i
				prev.rec.Status = memorykit.StatusSuperseded
				prev.rec.Version = 2
				prev.rec.TouchedBy = r.in.Actor
				prev.rec.UpdatedAt = r.rec.CreatedAt
			}
		}
		holders[k] = &batchHolder{id: r.in.ID, version: 1, item: i}
	}
	return sup, nil
}

// checkExpect checks in's expectation against h, the key's holder (nil:
// none), and then its KeyOwner condition against every record of the key.
func (s *Store) checkExpect(ctx context.Context, tx pgx.Tx, op string, in memorykit.NewRecord, h *batchHolder) error {
	if in.Expect == nil {
		return nil
	}
	holderID, version := "", int64(0)
	if h != nil {
		holderID, version = h.id, h.version
	}
	if err := in.Expect.Check(op, holderID, version); err != nil {
		return err
	}
	if o := in.Expect.KeyOwner; o != nil {
		governed, err := s.keyGoverned(ctx, tx, in.Scope, in.Key, *o)
		if err != nil {
			return err
		}
		if governed {
			return memorykit.NewError(op, memorykit.ErrVersionConflict, storekit.ReasonKeyGoverned)
		}
	}
	return nil
}

// copyBatch writes the planned records, their revisions (the "create" one,
// and the "supersede" one of an item a later item replaced) and their
// embeddings with COPY, and takes the embedded records off the embedding
// queue the records trigger put them on.
func (s *Store) copyBatch(ctx context.Context, tx pgx.Tx, op string, rows []batchRow) error {
	recRows := make([][]any, len(rows))
	var revRows, embRows [][]any
	var embIDs, embProfiles, embTenants []string
	for i, r := range rows {
		var until any
		if !r.rec.EffectiveUntil.IsZero() {
			until = r.rec.EffectiveUntil
		}
		recRows[i] = []any{r.rec.ID, r.rec.Scope.TenantID, string(r.rec.Scope.SubjectType), r.rec.Scope.SubjectID,
			string(r.rec.Kind), r.rec.Key, r.rec.Content, r.meta, r.src, string(r.rec.Status), r.rec.Version,
			r.rec.ContentHash, r.rec.EffectiveFrom, until, string(r.rec.CreatedBy.Kind), r.rec.CreatedBy.ID,
			string(r.rec.TouchedBy.Kind), r.rec.TouchedBy.ID, r.rec.CreatedAt, r.rec.UpdatedAt, r.terms}
		revRows = append(revRows, []any{r.rec.ID, int64(1), string(memorykit.ActionCreate), string(r.in.Actor.Kind),
			r.in.Actor.ID, r.in.Reason, string(r.in.Status), r.rec.ContentHash, r.rec.Content, r.meta, r.src, r.rec.CreatedAt,
			r.rec.Scope.TenantID})
		if r.superseder >= 0 {
			by := rows[r.superseder].in
			revRows = append(revRows, []any{r.rec.ID, int64(2), string(memorykit.ActionSupersede), string(by.Actor.Kind),
				by.Actor.ID, by.Reason, string(memorykit.StatusSuperseded), r.rec.ContentHash, r.rec.Content, r.meta, r.src, r.rec.UpdatedAt,
				r.rec.Scope.TenantID})
		}
		if r.emb != nil {
			embIDs, embProfiles = append(embIDs, r.rec.ID), append(embProfiles, r.emb.Profile)
			embTenants = append(embTenants, r.rec.Scope.TenantID)
			embRows = append(embRows, []any{r.rec.ID, r.emb.Profile, r.rec.Scope.TenantID, string(r.rec.Scope.SubjectType),
				r.rec.Scope.SubjectID, r.rec.ContentHash, int32(len(r.emb.Vector)), pgvector.NewVector(r.emb.Vector), r.rec.CreatedAt,
				r.rec.Status == memorykit.StatusActive})
		}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{s.schema, "records"}, []string{"id", "tenant_id", "subject_type",
		"subject_id", "kind", "key", "content", "metadata", "sources", "status", "version", "content_hash",
		"effective_from", "effective_until", "created_by_kind", "created_by_id", "touched_by_kind", "touched_by_id",
		"created_at", "updated_at", "search_tsv"}, pgx.CopyFromRows(recRows)); err != nil {
		if isUniqueViolation(err, "records_one_active") {
			return memorykit.WrapError(op, memorykit.ErrVersionConflict, "active_record_changed", err)
		}
		if isUniqueViolation(err, "records_pkey") {
			return memorykit.WrapError(op, memorykit.ErrAlreadyExists, "id_taken", err)
		}
		return err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{s.schema, "revisions"}, []string{"record_id", "version", "action",
		"actor_kind", "actor_id", "reason", "status", "content_hash", "content", "metadata", "sources", "at", "tenant_id"},
		pgx.CopyFromRows(revRows)); err != nil {
		return err
	}
	if len(embRows) == 0 {
		return nil
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{s.schema, "embeddings"}, []string{"record_id", "profile",
		"tenant_id", "subject_type", "subject_id", "content_hash", "dims", "embedding", "created_at", "live"},
		pgx.CopyFromRows(embRows)); err != nil {
		return err
	}
	// The records trigger queued these records for every registered
	// profile; the ones just given a vector need no work for it.
	if !s.distributed {
		_, err := tx.Exec(ctx, s.stmt("batch_dequeue_embedded"), embIDs, embProfiles, embTenants)
		return err
	}
	// On a distributed schema, one statement per tenant, each routed to
	// that tenant's shard, in one round trip.
	batch := &pgx.Batch{}
	for _, t := range sortedUnique(embTenants) {
		batch.Queue(s.stmt("batch_dequeue_embedded_in"), embIDs, embProfiles, embTenants, t)
	}
	return tx.SendBatch(ctx, batch).Close()
}

func cloneStrings(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func cloneSources(src []memorykit.Source) []memorykit.Source {
	if len(src) == 0 {
		return nil
	}
	return append([]memorykit.Source(nil), src...)
}
