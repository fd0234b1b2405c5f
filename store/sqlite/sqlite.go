// Package sqlite is the embedded default Store: one SQLite file, pure Go
// (modernc.org/sqlite), WAL journal, one transaction per Append.
package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairnhq/cairn/session"
	"github.com/cairnhq/cairn/store"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

const schema = `
CREATE TABLE IF NOT EXISTS sessions (
	id         TEXT PRIMARY KEY,
	agent      TEXT NOT NULL,
	status     TEXT NOT NULL,
	seq        INTEGER NOT NULL,
	created_at TEXT NOT NULL,
	updated_at TEXT NOT NULL,
	summary    BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
	session_id TEXT NOT NULL,
	seq        INTEGER NOT NULL,
	type       TEXT NOT NULL,
	time       TEXT NOT NULL,
	frame      TEXT NOT NULL,
	agent      TEXT NOT NULL,
	data       BLOB NOT NULL,
	PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (session_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS used_tokens (id TEXT PRIMARY KEY, used_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS outbox (
	id         TEXT PRIMARY KEY,
	topic      TEXT NOT NULL,
	body       BLOB NOT NULL,
	created_at TEXT NOT NULL,
	attempts   INTEGER NOT NULL DEFAULT 0,
	due        TEXT NOT NULL,              -- '' once given up
	owner      TEXT NOT NULL DEFAULT '',
	until      TEXT NOT NULL DEFAULT '',   -- the claim runs out
	last_error TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox(due) WHERE due != '';
CREATE TABLE IF NOT EXISTS blobs (key TEXT PRIMARY KEY, data BLOB NOT NULL);
-- Which session wrote which blob (blobs are shared by content), so a purge
-- deletes a blob only with the last session that refers to it. Blobs
-- stored before the table are kept for good (session '', see migrate).
CREATE TABLE IF NOT EXISTS blob_refs (session_id TEXT NOT NULL, key TEXT NOT NULL, PRIMARY KEY (session_id, key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS blob_refs_key ON blob_refs(key);
-- What a purge leaves of a session (store.Tombstone): its links and
-- callback URLs answer "gone".
CREATE TABLE IF NOT EXISTS tombstones (session_id TEXT PRIMARY KEY, nonce TEXT NOT NULL, seq INTEGER NOT NULL, purged_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS tombstones_purged_at ON tombstones(purged_at);
-- Standing rules (session.Rule, in JSON in data; uses and the revocation
-- are columns, changed in place). The processes that decide calls read
-- the live ones of a tenant's tools.
CREATE TABLE IF NOT EXISTS rules (
	id         TEXT PRIMARY KEY,
	tenant     TEXT NOT NULL,
	tool       TEXT NOT NULL,
	granted_at TEXT NOT NULL,
	expires_at TEXT NOT NULL,            -- '' never
	revoked_at TEXT NOT NULL DEFAULT '', -- '' not revoked
	revoked_by TEXT NOT NULL DEFAULT '', -- a session.Actor in JSON
	uses       INTEGER NOT NULL DEFAULT 0,
	data       BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS rules_live ON rules(tenant, tool) WHERE revoked_at = '';
-- One row per decided approval (store.DecisionRecord), for the analytics
-- (by tenant and time: the table's own order, so a commit writes one more
-- B-tree entry, not two) and the earned suggestions (by call shape).
CREATE TABLE IF NOT EXISTS decisions (
	id         TEXT NOT NULL,
	tenant     TEXT NOT NULL,
	session_id TEXT NOT NULL,
	agent      TEXT NOT NULL,
	tool       TEXT NOT NULL,
	shape      TEXT NOT NULL,
	action     TEXT NOT NULL,
	edited     INTEGER NOT NULL,
	expired    INTEGER NOT NULL,
	rule       TEXT NOT NULL,
	approver   TEXT NOT NULL,
	name       TEXT NOT NULL,
	asked_at   INTEGER NOT NULL, -- µs since 1970 (0: never asked): an integer reads without parsing
	decided_at INTEGER NOT NULL, -- µs since 1970
	detail     BLOB,
	PRIMARY KEY (tenant, decided_at, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS decisions_shape ON decisions(tenant, agent, tool, shape, decided_at);
`

// addedColumns came after the first release (turn leases, token outcomes,
// expiry due times); files made before them get them added: table, column.
var addedColumns = [][2]string{
	{"sessions", `lease_owner TEXT NOT NULL DEFAULT ''`},
	{"sessions", `lease_until TEXT NOT NULL DEFAULT ''`},
	{"sessions", `cancel_requested INTEGER NOT NULL DEFAULT 0`},
	{"sessions", `rev INTEGER NOT NULL DEFAULT 0`}, // commit order across the file, for Watch
	{"used_tokens", `outcome BLOB`},
	{"sessions", `next_expiry TEXT NOT NULL DEFAULT ''`},
	{"sessions", `cancel_by TEXT NOT NULL DEFAULT ''`},       // who asked for the cancel: a session.Actor in JSON
	{"sessions", `owner TEXT NOT NULL DEFAULT ''`},           // who started it, for listings by owner
	{"sessions", `pending_kinds INTEGER NOT NULL DEFAULT 0`}, // store.Kinds of the summary's interrupts, for the inbox by kind
	{"sessions", `tenant TEXT NOT NULL DEFAULT ''`},          // whose it is, for listings by tenant (sessions before it: the default tenant)
	{"events", `hash TEXT NOT NULL DEFAULT ''`},              // session.Event.Hash: the tamper-evident chain (events before it: '')
	{"sessions", `checkpoint TEXT NOT NULL DEFAULT ''`},      // Head.Checkpoint, the last signed one (store.EncodeCheckpoint; '': none)
	{"tombstones", `checkpoint TEXT NOT NULL DEFAULT ''`},    // Tombstone.Checkpoint, kept from the session's row
}

// busyTimeout is how long (ms) a statement waits for another process's
// lock on the file before failing.
const busyTimeout = 10000

// pageSize is the page size of a new file. A commit writes each page it
// changes whole to the WAL, and an approval cycle's four commits change
// about ten B-trees each (the events, the session's row, the listing
// indexes) by a few hundred bytes: with 2 KiB pages instead of SQLite's
// 4 KiB default a cycle writes 0.58× the bytes with one client and 0.24×
// with 64 (bench/server, docs/performance.md), at the same CPU; 1 KiB pages
// wrote less again but cost 40 % more CPU (more frames, events spilling
// into overflow pages). A file keeps the page size it was made with.
const pageSize = 2048

// walSizeLimit is the WAL file's size after it starts over (see Open).
const walSizeLimit = 4 << 20

// DefaultPoll is how often Watch looks for commits by other processes.
const DefaultPoll = 100 * time.Millisecond

// Store is a Store in one SQLite file.
type Store struct {
	db *sql.DB // reads; writes go through w
	w  *writer
	// The hot reads, prepared once (database/sql keeps them per connection).
	headStmt, eventsStmt, snapshotStmt *sql.Stmt
	// liveRulesStmt reads one tool's live rules: every model reply that
	// calls a tool a rule may decide asks it (local's rulesFor).
	liveRulesStmt *sql.Stmt
	feed          store.Feed
	pollMu        sync.Mutex
	polling       bool
	stop          context.CancelFunc
	stopped       context.Context
}

var (
	_ store.Store     = (*Store)(nil)
	_ store.Outbox    = (*Store)(nil)
	_ store.Blobs     = (*Store)(nil)
	_ store.Rules     = (*Store)(nil)
	_ store.Decisions = (*Store)(nil)
)

// Open opens (creating if needed) the SQLite database at path.
//
// Commits are durable against a crash of the process (kill -9) and of the
// machine: the journal is WAL with synchronous=FULL (an fsync per commit).
// A path ending in "?synchronous=normal" trades the machine-crash guarantee
// for speed: commits still survive kill -9 of the process, but the last ones
// may be lost if the operating system or the power fails.
func Open(ctx context.Context, path string) (*Store, error) {
	sync := "FULL"
	if p, params, ok := strings.Cut(path, "?"); ok {
		v, err := url.ParseQuery(params)
		if err != nil {
			return nil, fmt.Errorf("sqlite store %s: %w", path, err)
		}
		for k := range v {
			if k != "synchronous" {
				return nil, fmt.Errorf("sqlite store %s: unknown option %q (the only one is synchronous=full|normal)", path, k)
			}
		}
		switch strings.ToLower(v.Get("synchronous")) {
		case "", "full":
		case "normal":
			sync = "NORMAL"
		default:
			return nil, fmt.Errorf("sqlite store %s: synchronous=%q is not full or normal", path, v.Get("synchronous"))
		}
		path = p
	}
	if err := create(ctx, path); err != nil {
		return nil, fmt.Errorf("sqlite store %s: make the file: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	// When the WAL starts over (after each checkpoint that copied all of
	// it back), its file is cut to this size: without it the file keeps
	// its largest size ever, and the space a purge gave back would sit in
	// the WAL instead.
	q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walSizeLimit))
	q.Add("_pragma", "synchronous("+sync+")")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout))
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite store %s: %w", path, err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite store %s: create schema: %w", path, err)
	}
	w, err := newWriter(ctx, db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite store %s: start the writer: %w", path, err)
	}
	st := &Store{db: db, w: w}
	for _, p := range []struct {
		to    **sql.Stmt
		query string
	}{
		{&st.headStmt, `SELECT ` + headColumns + ` FROM sessions WHERE id=?`},
		{&st.liveRulesStmt, `SELECT ` + ruleColumns + ` FROM rules WHERE tenant=? AND tool=? AND revoked_at='' AND (expires_at='' OR expires_at>?) ORDER BY granted_at, id LIMIT ?`},
		{&st.eventsStmt, eventsQuery},
		{&st.snapshotStmt, `SELECT seq, data FROM snapshots WHERE session_id=?`},
	} {
		if *p.to, err = db.PrepareContext(ctx, p.query); err != nil {
			w.close()
			db.Close()
			return nil, fmt.Errorf("sqlite store %s: %w", path, err)
		}
	}
	st.stopped, st.stop = context.WithCancel(context.Background())
	return st, nil
}

// create makes the file if it is new, with auto_vacuum=incremental, so
// the pages a purge frees go back to the file system (PRAGMA
// incremental_vacuum after each batch). It is set here, once, before
// anything else writes the file, and not in the pragmas of every
// connection: setting it writes the file's header, so each connection the
// pool opens would wait for the writer's lock, and under load reads failed
// with SQLITE_BUSY. On a file made without it, it is off: VACUUM the file
// once to turn it on (docs/operations.md).
//
// The file is made under a name of its own and linked into place, which
// fails if another process got there first: processes starting at once on
// a new path would otherwise all switch one file to WAL, and SQLite
// refuses all but one of them with SQLITE_BUSY without waiting (each holds
// a read lock the others' switch needs).
func create(ctx context.Context, path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil // Open will report on it
	case err == nil && fi.Size() > 0:
		return nil // an existing file
	case err == nil:
		return initialise(ctx, path) // an empty file someone made: set it up in place
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".new-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	defer func() { _ = os.Remove(name) }()
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := initialise(ctx, name); err != nil {
		return err
	}
	if err := os.Link(name, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// initialise sets the page size, turns on incremental auto_vacuum and WAL
// in the empty file at path, in that order (the page size is fixed once
// the file is in WAL mode), and closes it (which takes the WAL back into
// the file).
func initialise(ctx context.Context, path string) error {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout))
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1) // the pragmas apply to the file through one connection, in order
	for _, pragma := range []string{fmt.Sprintf("PRAGMA page_size=%d", pageSize), "PRAGMA auto_vacuum=INCREMENTAL", "PRAGMA journal_mode=WAL"} {
		if _, err := db.ExecContext(ctx, pragma); err != nil {
			_ = db.Close()
			return fmt.Errorf("%s: %w", pragma, err)
		}
	}
	return db.Close()
}

func migrate(ctx context.Context, db *sql.DB) error {
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type='table' AND name IN ('blobs', 'blob_refs')`).Scan(&tables); err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		return err
	}
	if tables == 1 { // blobs without refs: a file from before purges
		if _, err := db.ExecContext(ctx, `INSERT OR IGNORE INTO blob_refs(session_id, key) SELECT '', key FROM blobs`); err != nil {
			return err
		}
	}
	have := map[[2]string]bool{}
	for _, table := range []string{"sessions", "used_tokens", "events", "tombstones"} {
		rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
		if err != nil {
			return err
		}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return err
			}
			have[[2]string{table, name}] = true
		}
		rows.Close()
	}
	for _, add := range addedColumns {
		name, _, _ := strings.Cut(add[1], " ")
		if have[[2]string{add[0], name}] {
			continue
		}
		if _, err := db.ExecContext(ctx, `ALTER TABLE `+add[0]+` ADD COLUMN `+add[1]); err != nil && !strings.Contains(err.Error(), "duplicate column") {
			return err
		}
		if add == [2]string{"sessions", `owner TEXT NOT NULL DEFAULT ''`} {
			// Sessions stored before the column: their owner is in the summary.
			if _, err := db.ExecContext(ctx, `UPDATE sessions SET owner=COALESCE(json_extract(CAST(summary AS TEXT), '$.owner'), '')`); err != nil {
				return err
			}
		}
		if name == "pending_kinds" {
			// Paused sessions stored before the column: their interrupts
			// are in the summary.
			if _, err := db.ExecContext(ctx, `UPDATE sessions SET pending_kinds=`+pendingKindsOf("summary")+` WHERE status='paused'`); err != nil {
				return err
			}
		}
	}
	// The listings walk these indexes backwards, in List's order (updated_at
	// DESC, id DESC), from the cursor on: no scan, no sort, at any depth.
	// sessions_status (status, updated_at), of earlier versions, ordered
	// ties by rowid, which made every listing sort. A person lists within
	// their tenant (ListOptions.ByTenant): a named tenant from the
	// sessions_tenant_* indexes, partial on store.NamedTenant so that a
	// file without tenants does not write them (each index costs every
	// commit: full ones made a pause and resume 27 % slower); the default
	// tenant, and the runtime and global listings, from the others. A listing
	// by owner is always within the owner's tenant (sessions_owner_order,
	// of earlier versions, lacked the tenant), and only sessions with an
	// owner are in its index (sessions_owner_tenant_order, of earlier
	// versions, had every session).
	//
	// The listings with no filter an index leads with (all sessions, the
	// default tenant's) merge one walk of sessions_status_order per status
	// (listQuery): sessions_order (updated_at, id), of earlier versions,
	// was one more index every commit that moves a session in the listing
	// rewrote, for a listing a person asks for now and then (without it
	// and with the owner index partial, a SQLite approval cycle writes 15 %
	// fewer bytes; docs/performance.md).
	_, err := db.ExecContext(ctx, `CREATE INDEX IF NOT EXISTS sessions_rev ON sessions(rev);
		CREATE INDEX IF NOT EXISTS sessions_next_expiry ON sessions(next_expiry) WHERE next_expiry != '';
		CREATE INDEX IF NOT EXISTS sessions_status_order ON sessions(status, updated_at, id);
		CREATE INDEX IF NOT EXISTS sessions_agent_order ON sessions(agent, updated_at, id);
		CREATE INDEX IF NOT EXISTS sessions_tenant_order ON sessions(tenant, updated_at, id) WHERE `+store.NamedTenant+`;
		CREATE INDEX IF NOT EXISTS sessions_tenant_status_order ON sessions(tenant, status, updated_at, id) WHERE `+store.NamedTenant+`;
		CREATE INDEX IF NOT EXISTS sessions_tenant_agent_order ON sessions(tenant, agent, updated_at, id) WHERE `+store.NamedTenant+`;
		CREATE INDEX IF NOT EXISTS sessions_owned_order ON sessions(owner, tenant, updated_at, id) WHERE `+store.Owned+`;
		DROP INDEX IF EXISTS sessions_order;
		DROP INDEX IF EXISTS sessions_owner_tenant_order;
		DROP INDEX IF EXISTS sessions_owner_order;
		DROP INDEX IF EXISTS sessions_status;`+kindIndexes())
	return err
}

// kindIndexes makes a partial index per interrupt kind on the paused
// sessions that have one pending: the inbox filtered by kind walks it like
// the others, and a kind that is rare costs no walk past the ones it skips.
// List's WHERE repeats each index's condition word for word (store.KindCondition),
// which is how SQLite knows it may use it.
//
// Appends write pending_kinds with the summary: a paused session's are
// never 0 (it waits for at least one interrupt), anyone else's always are.
// A process of an older version knows nothing of the column (a rolling
// upgrade), so its writes break that rule; triggers mend exactly those
// rows, reading the kinds from the summary, and cost nothing otherwise
// (reading them at every pause made a SQLite pause and resume 11–17 %
// slower).
func kindIndexes() string {
	var b strings.Builder
	for _, k := range store.IndexedKinds() {
		fmt.Fprintf(&b, "\n\t\tCREATE INDEX IF NOT EXISTS sessions_paused_%s ON sessions(updated_at, id) WHERE %s;", k, store.KindCondition(store.KindBit(k)))
		fmt.Fprintf(&b, "\n\t\tCREATE INDEX IF NOT EXISTS sessions_tenant_paused_%s ON sessions(tenant, updated_at, id) WHERE %s AND %s;", k, store.KindCondition(store.KindBit(k)), store.NamedTenant)
	}
	read := `UPDATE sessions SET pending_kinds=` + pendingKindsOf("NEW.summary") + ` WHERE id=NEW.id;`
	clear := `UPDATE sessions SET pending_kinds=0 WHERE id=NEW.id;`
	b.WriteString(`
		CREATE TRIGGER IF NOT EXISTS sessions_kinds_on_insert AFTER INSERT ON sessions
			WHEN NEW.status='paused' AND NEW.pending_kinds=0 BEGIN ` + read + ` END;
		CREATE TRIGGER IF NOT EXISTS sessions_kinds_on_pause AFTER UPDATE OF status, summary ON sessions
			WHEN NEW.status='paused' AND NEW.pending_kinds=0 BEGIN ` + read + ` END;
		CREATE TRIGGER IF NOT EXISTS sessions_kinds_on_resume AFTER UPDATE OF status, summary ON sessions
			WHEN NEW.status!='paused' AND NEW.pending_kinds!=0 BEGIN ` + clear + ` END;`)
	return b.String()
}

// pendingKindsOf is an SQL expression for the store.Kinds of the
// interrupts in summary (SUM of distinct bits is their OR).
func pendingKindsOf(summary string) string {
	return `(SELECT COALESCE(SUM(DISTINCT ` + store.KindBitSQL("json_extract(value, '$.kind')") + `), 0) FROM json_each(CAST(` + summary + ` AS TEXT), '$.interrupts'))`
}

// Durable is store.Durable: an append returns once it is durable.
func (s *Store) Durable() bool { return true }

// Close closes the database.
func (s *Store) Close() error {
	s.stop()
	s.w.close()
	for _, st := range []*sql.Stmt{s.headStmt, s.eventsStmt, s.snapshotStmt, s.liveRulesStmt} {
		st.Close()
	}
	return s.db.Close()
}

// exec runs one write statement through the writer.
func (s *Store) exec(ctx context.Context, query string, args ...any) (res sql.Result, err error) {
	err = s.write(ctx, func(ctx context.Context, tx conn) error {
		res, err = tx.ExecContext(ctx, query, args...)
		return err
	}, nil)
	return res, err
}

// nextRev is the commit-order counter of the file; writers hold the write
// lock (BEGIN IMMEDIATE), so revs are committed in increasing order.
const nextRev = `(SELECT COALESCE(MAX(rev), 0) + 1 FROM sessions)`

func leaseUntil(l store.Lease) string {
	if l.Owner == "" {
		return ""
	}
	return l.Until.UTC().Format(timeLayout)
}

// timeLayout is fixed-width so that text order is time order.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// Append implements store.Store. It goes through the writer: under load,
// many appends share one transaction and one fsync (group commit), each
// answered once its commit is durable.
func (s *Store) Append(ctx context.Context, head store.Head, expectedSeq int64, events []session.Event) error {
	return s.write(ctx, func(ctx context.Context, tx conn) error { return s.appendIn(ctx, tx, head, expectedSeq, events) },
		func() { s.feed.Publish(store.Change{SessionID: head.ID, Seq: head.Seq}) }) // at once for this process; others poll
}

const (
	insertSession = `INSERT INTO sessions(id, agent, status, seq, created_at, updated_at, summary, pending_kinds, lease_owner, lease_until, next_expiry, owner, tenant, checkpoint, rev)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,COALESCE(?, ''),` + nextRev + `)`
	updateSession = `UPDATE sessions SET status=?, seq=?, updated_at=?, summary=COALESCE(?, summary), pending_kinds=COALESCE(?, pending_kinds),
		lease_owner=?, lease_until=?, cancel_requested=(cancel_requested AND ?='running'), next_expiry=?, checkpoint=COALESCE(?, checkpoint), rev=` + nextRev + `
		WHERE id=? AND seq=? AND (lease_owner='' OR lease_owner=? OR lease_until<=?)`
	// quietUpdate is updateSession for a Quiet head: no column a listing
	// index holds is set, so SQLite writes none of those indexes (it
	// skips an index whose columns an UPDATE does not name).
	quietUpdate = `UPDATE sessions SET seq=?, lease_owner=?, lease_until=?, checkpoint=COALESCE(?, checkpoint), rev=` + nextRev + `
		WHERE id=? AND seq=? AND (lease_owner='' OR lease_owner=? OR lease_until<=?)`
	insertEvent    = `INSERT INTO events(session_id, seq, type, time, frame, agent, data, hash) VALUES (?,?,?,?,?,?,?,?)`
	insertOutbox   = `INSERT INTO outbox(id, topic, body, created_at, due) VALUES (?,?,?,?,?) ON CONFLICT(id) DO NOTHING`
	insertBlob     = `INSERT INTO blobs(key, data) VALUES (?, ?) ON CONFLICT(key) DO NOTHING`
	insertRef      = `INSERT INTO blob_refs(session_id, key) VALUES (?, ?) ON CONFLICT DO NOTHING`
	insertDecision = `INSERT INTO decisions(id, tenant, session_id, agent, tool, shape, action, edited, expired, rule, approver, name, asked_at, decided_at, detail)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING`
	insertRule  = `INSERT INTO rules(id, tenant, tool, granted_at, expires_at, data) VALUES (?,?,?,?,?,?) ON CONFLICT(id) DO NOTHING`
	putSnapshot = `INSERT INTO snapshots(session_id, seq, data) VALUES (?,?,?) ON CONFLICT(session_id) DO UPDATE SET seq=excluded.seq, data=excluded.data`
)

func (s *Store) appendIn(ctx context.Context, tx conn, head store.Head, expectedSeq int64, events []session.Event) error {
	exec := func(query string, args ...any) (sql.Result, error) { return s.w.exec(ctx, query, args...) }
	if expectedSeq == 0 {
		_, err := exec(insertSession, head.ID, head.Agent, head.Status, head.Seq, head.CreatedAt.UTC().Format(timeLayout), head.UpdatedAt.UTC().Format(timeLayout),
			[]byte(head.Summary), head.PendingKinds, head.Lease.Owner, leaseUntil(head.Lease), optionalTime(head.NextExpiry), head.Owner, head.Tenant,
			store.EncodeCheckpoint(head.Checkpoint))
		if err != nil {
			if strings.Contains(err.Error(), "UNIQUE") || strings.Contains(err.Error(), "PRIMARY KEY") {
				return store.ErrConflict
			}
			return fmt.Errorf("sqlite append %s: %w", head.ID, err)
		}
	} else {
		var summary, kinds any // NULL keeps the stored summary, and its kinds
		if head.Summary != nil {
			summary, kinds = []byte(head.Summary), head.PendingKinds
		}
		now := head.UpdatedAt.UTC().Format(timeLayout)
		var res sql.Result
		var err error
		if head.Quiet {
			res, err = exec(quietUpdate, head.Seq, head.Lease.Owner, leaseUntil(head.Lease), store.EncodeCheckpoint(head.Checkpoint), head.ID, expectedSeq, head.Lease.Owner, now)
		} else {
			res, err = exec(updateSession, head.Status, head.Seq, now, summary, kinds, head.Lease.Owner, leaseUntil(head.Lease), head.Status, optionalTime(head.NextExpiry),
				store.EncodeCheckpoint(head.Checkpoint), head.ID, expectedSeq, head.Lease.Owner, now)
		}
		if err != nil {
			return fmt.Errorf("sqlite append %s: %w", head.ID, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			var one int
			if err := tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id=?`, head.ID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return store.ErrConflict
		}
	}
	for _, e := range events {
		if _, err := exec(insertEvent, head.ID, e.Seq, e.Type, e.Time.UTC().Format(timeLayout), e.Frame, e.Agent, []byte(e.Data), e.Hash); err != nil {
			return fmt.Errorf("sqlite append %s event %d: %w", head.ID, e.Seq, err)
		}
	}
	for _, m := range head.Outbox {
		at := m.CreatedAt.UTC().Format(timeLayout)
		if _, err := exec(insertOutbox, m.ID, m.Topic, m.Body, at, at); err != nil {
			return fmt.Errorf("sqlite append %s outbox: %w", head.ID, err)
		}
	}
	for _, b := range head.Blobs {
		if _, err := exec(insertBlob, b.Key, b.Data); err != nil {
			return fmt.Errorf("sqlite append %s blob: %w", head.ID, err)
		}
		if _, err := exec(insertRef, head.ID, b.Key); err != nil {
			return fmt.Errorf("sqlite append %s blob: %w", head.ID, err)
		}
	}
	for _, r := range head.Rules {
		data, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("sqlite append %s rule: %w", head.ID, err)
		}
		if _, err := exec(insertRule, r.ID, r.Tenant, r.Tool, r.GrantedAt.UTC().Format(timeLayout), ruleExpiry(r.ExpiresAt), data); err != nil {
			return fmt.Errorf("sqlite append %s rule: %w", head.ID, err)
		}
	}
	for _, d := range head.Decisions {
		if _, err := exec(insertDecision, d.ID, d.Tenant, d.SessionID, d.Agent, d.Tool, d.Shape, d.Action, d.Edited, d.Expired, d.Rule, d.Approver, d.Name,
			micros(d.AskedAt), micros(d.DecidedAt), []byte(d.Detail)); err != nil {
			return fmt.Errorf("sqlite append %s decision: %w", head.ID, err)
		}
	}
	for _, id := range head.RuleUses {
		if _, err := exec(`UPDATE rules SET uses=uses+1 WHERE id=?`, id); err != nil {
			return fmt.Errorf("sqlite append %s rule use: %w", head.ID, err)
		}
	}
	if head.Snapshot != nil {
		if _, err := exec(putSnapshot, head.ID, head.Seq, head.Snapshot); err != nil {
			return fmt.Errorf("sqlite append %s snapshot: %w", head.ID, err)
		}
	}
	return nil
}

// RenewLease implements store.Store.
func (s *Store) RenewLease(ctx context.Context, id string, lease store.Lease) (bool, error) {
	var cancel bool
	err := s.write(ctx, func(ctx context.Context, tx conn) error {
		return tx.QueryRowContext(ctx, `UPDATE sessions SET lease_until=? WHERE id=? AND lease_owner=? AND status='running' RETURNING cancel_requested`,
			leaseUntil(lease), id, lease.Owner).Scan(&cancel)
	}, nil)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.Head(ctx, id); err != nil {
			return false, err
		}
		return false, store.ErrConflict
	}
	if err != nil {
		return false, fmt.Errorf("sqlite renew lease %s: %w", id, err)
	}
	return cancel, nil
}

// RequestCancel implements store.Store.
func (s *Store) RequestCancel(ctx context.Context, id string, by session.Actor) error {
	var seq int64
	err := s.write(ctx, func(ctx context.Context, tx conn) error {
		return tx.QueryRowContext(ctx, `UPDATE sessions SET cancel_requested=1, cancel_by=?, rev=`+nextRev+` WHERE id=? AND status='running' RETURNING seq`, store.EncodeActor(by), id).Scan(&seq)
	}, nil)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err := s.Head(ctx, id); err != nil {
			return err
		}
		return store.ErrConflict
	}
	if err != nil {
		return fmt.Errorf("sqlite request cancel %s: %w", id, err)
	}
	s.feed.Publish(store.Change{SessionID: id, Seq: seq, CancelRequested: true})
	return nil
}

// Watch implements store.Store: commits of this Store are delivered at
// once, those of other processes on the same file within DefaultPoll (one
// indexed query per poll).
func (s *Store) Watch(ctx context.Context) (<-chan store.Change, error) {
	if err := s.startPolling(ctx); err != nil {
		return nil, err
	}
	return s.feed.Watch(ctx), nil
}

// WatchSome implements store.SelectiveWatcher.
func (s *Store) WatchSome(ctx context.Context, want func(store.Change) bool) (<-chan store.Change, error) {
	if err := s.startPolling(ctx); err != nil {
		return nil, err
	}
	return s.feed.WatchSome(ctx, want), nil
}

// startPolling starts following other processes' commits, once.
func (s *Store) startPolling(ctx context.Context) error {
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	if !s.polling {
		var last int64
		if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(rev), 0) FROM sessions`).Scan(&last); err != nil {
			return fmt.Errorf("sqlite watch: %w", err)
		}
		s.polling = true
		go s.poll(last)
	}
	return nil
}

func (s *Store) poll(last int64) {
	t := time.NewTicker(DefaultPoll)
	defer t.Stop()
	for {
		select {
		case <-s.stopped.Done():
			return
		case <-t.C:
		}
		changes, err := s.changesAfter(last)
		if err != nil {
			continue // the next poll retries
		}
		for _, c := range changes {
			s.feed.Publish(c.Change)
			last = c.rev
		}
	}
}

type revChange struct {
	store.Change
	rev int64
}

func (s *Store) changesAfter(rev int64) ([]revChange, error) {
	rows, err := s.db.QueryContext(s.stopped, changesQuery, rev)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []revChange
	for rows.Next() {
		var c revChange
		if err := rows.Scan(&c.SessionID, &c.Seq, &c.CancelRequested, &c.rev); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Events implements store.Store.
func (s *Store) Events(ctx context.Context, id string, after int64) ([]session.Event, error) {
	rows, err := s.eventsStmt.QueryContext(ctx, id, after)
	if err != nil {
		return nil, fmt.Errorf("sqlite events %s: %w", id, err)
	}
	defer rows.Close()
	var out []session.Event
	for rows.Next() {
		var e session.Event
		var t string
		var data []byte
		if err := rows.Scan(&e.Seq, &e.Type, &t, &e.Frame, &e.Agent, &data, &e.Hash); err != nil {
			return nil, fmt.Errorf("sqlite events %s: %w", id, err)
		}
		if e.Time, err = time.Parse(timeLayout, t); err != nil {
			return nil, fmt.Errorf("sqlite events %s seq %d: bad time %q: %w", id, e.Seq, t, err)
		}
		e.Data = data
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite events %s: %w", id, err)
	}
	if len(out) == 0 {
		if _, err := s.Head(ctx, id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Head implements store.Store.
func (s *Store) Head(ctx context.Context, id string) (store.Head, error) {
	row := s.headStmt.QueryRowContext(ctx, id)
	h, err := scanHead(row)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Head{}, store.ErrNotFound
	}
	if err != nil {
		return store.Head{}, fmt.Errorf("sqlite head %s: %w", id, err)
	}
	return h, nil
}

// listQuery is List's query: a range on one of the order indexes, or, for
// a listing that filters on nothing an index leads with, one range of
// sessions_status_order per status, merged.
func listQuery(opts store.ListOptions) (string, []any, error) {
	if !opts.Led() {
		// SQLite merges the arms of a compound SELECT by the compound's
		// ORDER BY ("MERGE (UNION ALL)"), each arm a walk of the index in
		// that order, run as a co-routine: the LIMIT stops them all.
		var arms []string
		var args []any
		for _, st := range session.AllStatuses() {
			o := opts
			o.Status, o.Limit = st, 0
			arm, armArgs, err := armQuery(o)
			if err != nil {
				return "", nil, err
			}
			arms = append(arms, arm)
			args = append(args, armArgs...)
		}
		q := strings.Join(arms, ` UNION ALL `) + ` ORDER BY updated_at DESC, id DESC`
		if opts.Limit > 0 {
			q += fmt.Sprintf(` LIMIT %d`, opts.Limit)
		}
		return q, args, nil
	}
	q, args, err := armQuery(opts)
	if err != nil {
		return "", nil, err
	}
	q += ` ORDER BY updated_at DESC, id DESC`
	if opts.Limit > 0 {
		q += fmt.Sprintf(` LIMIT %d`, opts.Limit)
	}
	return q, args, nil
}

// armQuery is listQuery without its ORDER BY and LIMIT.
func armQuery(opts store.ListOptions) (string, []any, error) {
	kind, err := opts.KindFilter()
	if err != nil {
		return "", nil, err
	}
	q := `SELECT ` + headColumns + ` FROM sessions WHERE 1=1`
	var args []any
	if kind != 0 {
		// INDEXED BY: the planner would rather walk sessions_status_order
		// and filter, reading every paused session to find a rare kind.
		// opts.Kind is one KindFilter knows, so the name is safe to splice.
		index := "sessions_paused_"
		if opts.ByTenant && opts.Tenant != "" {
			index = "sessions_tenant_paused_"
		}
		q = `SELECT ` + headColumns + ` FROM sessions INDEXED BY ` + index + string(opts.Kind) + ` WHERE ` + store.KindCondition(kind)
		if opts.Status == session.StatusPaused {
			opts.Status = "" // store.KindCondition says it, in the words of the index
		}
	}
	if opts.Status != "" {
		q += ` AND status=?`
		args = append(args, opts.Status)
	}
	if opts.Agent != "" {
		q += ` AND agent=?`
		args = append(args, opts.Agent)
	}
	if opts.Owner != "" {
		q += ` AND owner=? AND ` + store.Owned
		args = append(args, opts.Owner)
	}
	switch {
	case opts.ByTenant && opts.Tenant != "":
		q += ` AND tenant=? AND ` + store.NamedTenant
		args = append(args, opts.Tenant)
	case opts.ByTenant:
		q += ` AND tenant=''`
	}
	if !opts.LeaseExpiredAt.IsZero() {
		q += ` AND status='running' AND (lease_owner='' OR lease_until<=?)`
		args = append(args, opts.LeaseExpiredAt.UTC().Format(timeLayout))
	}
	if !opts.ExpiredAt.IsZero() {
		q += ` AND status='paused' AND next_expiry!='' AND next_expiry<=?`
		args = append(args, opts.ExpiredAt.UTC().Format(timeLayout))
	}
	if opts.After != (store.Position{}) {
		// Written so the range is explicit: "updated_at <= at" bounds the
		// index walk; the rest drops the ties at or before the cursor.
		// (updated_at<? OR (updated_at=? AND id<?)) gives SQLite no range,
		// so a page at depth N would read N rows to get there.
		at := opts.After.UpdatedAt.UTC().Format(timeLayout)
		q += ` AND updated_at<=? AND (updated_at<? OR id<?)`
		args = append(args, at, at, opts.After.ID)
	}
	return q, args, nil
}

// ExplainList is the plan of List(opts) as SQLite prints it (EXPLAIN QUERY
// PLAN), one step a line: what the conformance suite checks, and what an
// operator reads when a listing is slow.
func (s *Store) ExplainList(ctx context.Context, opts store.ListOptions) (string, error) {
	q, args, err := listQuery(opts)
	if err != nil {
		return "", err
	}
	return s.explain(ctx, q, args...)
}

// ExplainEvents is the plan of Events(id, after).
func (s *Store) ExplainEvents(ctx context.Context, id string, after int64) (string, error) {
	return s.explain(ctx, eventsQuery, id, after)
}

// ExplainChanges is the plan of the query that feeds Watch: the sessions
// whose head changed after a revision.
func (s *Store) ExplainChanges(ctx context.Context, rev int64) (string, error) {
	return s.explain(ctx, changesQuery, rev)
}

func (s *Store) explain(ctx context.Context, q string, args ...any) (string, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return "", fmt.Errorf("sqlite explain: %w", err)
	}
	defer conn.Close()
	// EXPLAIN QUERY PLAN plans with the schema the connection last read;
	// reading the schema table first makes it see a change made by
	// another connection (an index added or dropped since).
	var n int
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&n); err != nil {
		return "", fmt.Errorf("sqlite explain: %w", err)
	}
	rows, err := conn.QueryContext(ctx, `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		return "", fmt.Errorf("sqlite explain: %w", err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return "", fmt.Errorf("sqlite explain: %w", err)
		}
		lines = append(lines, detail)
	}
	return strings.Join(lines, "\n"), rows.Err()
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, opts store.ListOptions) ([]store.Head, error) {
	q, args, err := listQuery(opts)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite list: %w", err)
	}
	defer rows.Close()
	var out []store.Head
	for rows.Next() {
		h, err := scanHead(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite list: %w", err)
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// LatestSnapshot implements store.Store.
func (s *Store) LatestSnapshot(ctx context.Context, id string) (int64, []byte, error) {
	var seq int64
	var data []byte
	err := s.snapshotStmt.QueryRowContext(ctx, id).Scan(&seq, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil, store.ErrNotFound
	}
	if err != nil {
		return 0, nil, fmt.Errorf("sqlite snapshot %s: %w", id, err)
	}
	return seq, data, nil
}

// Secret implements store.Store.
func (s *Store) Secret(ctx context.Context, name string, value []byte) ([]byte, error) {
	if _, err := s.exec(ctx, `INSERT INTO secrets(name, value) VALUES (?, ?) ON CONFLICT(name) DO NOTHING`, name, value); err != nil {
		return nil, fmt.Errorf("sqlite secret %s: %w", name, err)
	}
	var v []byte
	if err := s.db.QueryRowContext(ctx, `SELECT value FROM secrets WHERE name=?`, name).Scan(&v); err != nil {
		return nil, fmt.Errorf("sqlite secret %s: %w", name, err)
	}
	return v, nil
}

// MarkUsed implements store.Ledger.
func (s *Store) MarkUsed(ctx context.Context, id string) error {
	res, err := s.exec(ctx, `INSERT INTO used_tokens(id, used_at) VALUES (?, ?) ON CONFLICT(id) DO NOTHING`, id, time.Now().UTC().Format(timeLayout))
	if err != nil {
		return fmt.Errorf("sqlite mark used: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrConflict
	}
	return nil
}

// SetOutcome implements store.Ledger.
func (s *Store) SetOutcome(ctx context.Context, id string, outcome []byte) error {
	if outcome == nil {
		outcome = []byte{}
	}
	res, err := s.exec(ctx, `UPDATE used_tokens SET outcome=? WHERE id=?`, outcome, id)
	if err != nil {
		return fmt.Errorf("sqlite set outcome %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("sqlite set outcome %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// Outcome implements store.Ledger.
func (s *Store) Outcome(ctx context.Context, id string) ([]byte, error) {
	var out []byte
	err := s.db.QueryRowContext(ctx, `SELECT outcome FROM used_tokens WHERE id=?`, id).Scan(&out)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite outcome %s: %w", id, err)
	}
	return out, nil
}

// ClaimMessages implements store.Outbox.
func (s *Store) ClaimMessages(ctx context.Context, owner string, now, until time.Time, limit int) ([]store.Message, error) {
	at := now.UTC().Format(timeLayout)
	var out []store.Message
	err := s.write(ctx, func(ctx context.Context, tx conn) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, `UPDATE outbox SET owner=?, until=?, attempts=attempts+1
			WHERE id IN (SELECT id FROM outbox WHERE due != '' AND due <= ? AND until <= ? ORDER BY due, id LIMIT ?)
			RETURNING id, topic, body, created_at, attempts`, owner, until.UTC().Format(timeLayout), at, at, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var m store.Message
			var created string
			if err := rows.Scan(&m.ID, &m.Topic, &m.Body, &created, &m.Attempts); err != nil {
				return err
			}
			if m.CreatedAt, err = time.Parse(timeLayout, created); err != nil {
				return fmt.Errorf("message %s: %w", m.ID, err)
			}
			out = append(out, m)
		}
		return rows.Err()
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite outbox claim: %w", err)
	}
	slices.SortFunc(out, func(a, b store.Message) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// AckMessage implements store.Outbox.
func (s *Store) AckMessage(ctx context.Context, id string) error {
	if _, err := s.exec(ctx, `DELETE FROM outbox WHERE id=?`, id); err != nil {
		return fmt.Errorf("sqlite outbox ack %s: %w", id, err)
	}
	return nil
}

// RetryMessage implements store.Outbox.
func (s *Store) RetryMessage(ctx context.Context, id, owner string, at time.Time, why string) error {
	res, err := s.exec(ctx, `UPDATE outbox SET owner='', until='', due=?, last_error=? WHERE id=? AND owner=?`,
		optionalTime(at), why, id, owner)
	if err != nil {
		return fmt.Errorf("sqlite outbox retry %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrConflict
	}
	return nil
}

// PutBlob implements store.Blobs.
func (s *Store) PutBlob(ctx context.Context, key string, data []byte) error {
	if _, err := s.exec(ctx, insertBlob, key, data); err != nil {
		return fmt.Errorf("sqlite blob %s: %w", key, err)
	}
	return nil
}

// GetBlobs implements store.Blobs: one query for every key.
func (s *Store) GetBlobs(ctx context.Context, keys []string) ([][]byte, error) {
	list, err := json.Marshal(keys)
	if err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT key, data FROM blobs WHERE key IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return nil, fmt.Errorf("sqlite blobs: %w", err)
	}
	defer rows.Close()
	found := make(map[string][]byte, len(keys))
	for rows.Next() {
		var key string
		var b []byte
		if err := rows.Scan(&key, &b); err != nil {
			return nil, fmt.Errorf("sqlite blobs: %w", err)
		}
		found[key] = b
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite blobs: %w", err)
	}
	return store.OrderBlobs(keys, found)
}

type scanner interface{ Scan(dest ...any) error }

// The queries of a session's events and of the change feed.
const (
	eventsQuery  = `SELECT seq, type, time, frame, agent, data, hash FROM events WHERE session_id=? AND seq>? ORDER BY seq`
	changesQuery = `SELECT id, seq, cancel_requested, rev FROM sessions WHERE rev > ? ORDER BY rev LIMIT 1000`
)

const headColumns = `id, agent, status, seq, created_at, updated_at, summary, lease_owner, lease_until, cancel_requested, next_expiry, cancel_by, owner, pending_kinds, tenant`

// optionalTime stores a zero time as "".
func optionalTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

func scanHead(r scanner) (store.Head, error) {
	var h store.Head
	var created, updated, until, expiry, cancelBy string
	var summary []byte
	if err := r.Scan(&h.ID, &h.Agent, &h.Status, &h.Seq, &created, &updated, &summary, &h.Lease.Owner, &until, &h.CancelRequested, &expiry, &cancelBy, &h.Owner, &h.PendingKinds, &h.Tenant); err != nil {
		return h, err
	}
	if h.CancelRequested {
		h.CancelBy = store.DecodeActor(cancelBy)
	}
	if expiry != "" {
		var err error
		if h.NextExpiry, err = time.Parse(timeLayout, expiry); err != nil {
			return h, err
		}
	}
	if until != "" {
		var err error
		if h.Lease.Until, err = time.Parse(timeLayout, until); err != nil {
			return h, err
		}
	}
	var err error
	if h.CreatedAt, err = time.Parse(timeLayout, created); err != nil {
		return h, err
	}
	if h.UpdatedAt, err = time.Parse(timeLayout, updated); err != nil {
		return h, err
	}
	h.Summary = summary
	return h, nil
}

// Purge implements store.Purger: one commit per batch, through the writer,
// so a sweep holds the file for one batch at a time.
func (s *Store) Purge(ctx context.Context, opts store.PurgeOptions) ([]store.Head, error) {
	if err := opts.Check(); err != nil {
		return nil, err
	}
	before := opts.Before.UTC().Format(timeLayout)
	// The ids alone: a summary is not worth reading to delete it.
	rows, err := s.db.QueryContext(ctx, `SELECT id, updated_at FROM sessions WHERE status=? AND updated_at<? ORDER BY updated_at, id LIMIT ?`,
		opts.Status, before, opts.BatchSize())
	if err != nil {
		return nil, fmt.Errorf("sqlite purge: %w", err)
	}
	var due []store.Head
	for rows.Next() {
		h := store.Head{Status: opts.Status}
		var updated string
		if err := rows.Scan(&h.ID, &updated); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite purge: %w", err)
		}
		if h.UpdatedAt, err = time.Parse(timeLayout, updated); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite purge: %w", err)
		}
		due = append(due, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite purge: %w", err)
	}
	var purged []store.Head
	purgedAt := opts.PurgedAt().Format(timeLayout)
	err = s.write(ctx, func(ctx context.Context, tx conn) error {
		purged = purged[:0]
		if !opts.TombstonesBefore.IsZero() {
			if _, err := s.w.exec(ctx, `DELETE FROM tombstones WHERE purged_at<?`, opts.TombstonesBefore.UTC().Format(timeLayout)); err != nil {
				return err
			}
		}
		for _, h := range due {
			// Only if it is still what was read: finished, and as old. Its
			// tombstone first, from the row about to go.
			if _, err := s.w.exec(ctx, `INSERT INTO tombstones(session_id, nonce, seq, purged_at, checkpoint)
					SELECT id, COALESCE(json_extract(CAST(summary AS TEXT), '$.nonce'), ''), seq, ?, checkpoint FROM sessions WHERE id=? AND status=? AND updated_at<?
				ON CONFLICT(session_id) DO UPDATE SET nonce=excluded.nonce, seq=excluded.seq, purged_at=excluded.purged_at, checkpoint=excluded.checkpoint`,
				purgedAt, h.ID, opts.Status, before); err != nil {
				return err
			}
			res, err := s.w.exec(ctx, `DELETE FROM sessions WHERE id=? AND status=? AND updated_at<?`, h.ID, opts.Status, before)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				continue
			}
			for _, q := range []string{
				`DELETE FROM events WHERE session_id=?`,
				`DELETE FROM snapshots WHERE session_id=?`,
				`DELETE FROM blobs WHERE key IN (SELECT key FROM blob_refs WHERE session_id=?1)
					AND NOT EXISTS (SELECT 1 FROM blob_refs r WHERE r.key=blobs.key AND r.session_id!=?1)`,
				`DELETE FROM blob_refs WHERE session_id=?`,
			} {
				if _, err := s.w.exec(ctx, q, h.ID); err != nil {
					return err
				}
			}
			purged = append(purged, h)
		}
		if _, err := s.w.exec(ctx, `DELETE FROM outbox WHERE due='' AND created_at<?`, before); err != nil {
			return err
		}
		// Give the freed pages back to the file system, a bounded number
		// per batch (8 MiB of a new file's pages, 16 MiB of an older
		// file's 4 KiB ones), so the commit stays short.
		_, err := s.w.exec(ctx, `PRAGMA incremental_vacuum(4096)`)
		return err
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite purge: %w", err)
	}
	return purged, nil
}

// Tombstone implements store.Purger.
func (s *Store) Tombstone(ctx context.Context, id string) (store.Tombstone, error) {
	t, err := scanTombstone(s.db.QueryRowContext(ctx, `SELECT `+tombstoneColumns+` FROM tombstones WHERE session_id=?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Tombstone{}, fmt.Errorf("tombstone of %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Tombstone{}, fmt.Errorf("sqlite tombstone of %s: %w", id, err)
	}
	return t, nil
}

// Tombstones implements store.Purger.
func (s *Store) Tombstones(ctx context.Context, after string, limit int) ([]store.Tombstone, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+tombstoneColumns+` FROM tombstones WHERE session_id>? ORDER BY session_id LIMIT ?`, after, cmp.Or(limit, -1))
	if err != nil {
		return nil, fmt.Errorf("sqlite tombstones: %w", err)
	}
	defer rows.Close()
	var out []store.Tombstone
	for rows.Next() {
		t, err := scanTombstone(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite tombstones: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite tombstones: %w", err)
	}
	return out, nil
}

const tombstoneColumns = `session_id, nonce, seq, purged_at, checkpoint`

func scanTombstone(r scanner) (store.Tombstone, error) {
	var t store.Tombstone
	var at, cp string
	if err := r.Scan(&t.ID, &t.Nonce, &t.Seq, &at, &cp); err != nil {
		return t, err
	}
	var err error
	if t.PurgedAt, err = time.Parse(timeLayout, at); err != nil {
		return t, err
	}
	t.Checkpoint, err = store.DecodeCheckpoint(cp)
	return t, err
}

// Checkpoint implements store.Checkpoints.
func (s *Store) Checkpoint(ctx context.Context, id string) (session.Checkpoint, error) {
	var text string
	err := s.db.QueryRowContext(ctx, `SELECT checkpoint FROM sessions WHERE id=?`, id).Scan(&text)
	if errors.Is(err, sql.ErrNoRows) {
		text, err = "", nil
	}
	if err != nil {
		return session.Checkpoint{}, fmt.Errorf("sqlite checkpoint of %s: %w", id, err)
	}
	cp, err := store.DecodeCheckpoint(text)
	switch {
	case err != nil:
		return session.Checkpoint{}, fmt.Errorf("sqlite checkpoint of %s: %w", id, err)
	case cp == nil:
		return session.Checkpoint{}, fmt.Errorf("checkpoint of %s: %w", id, store.ErrNotFound)
	}
	return *cp, nil
}

// ruleExpiry is a rule's expires_at column: ” for never.
func ruleExpiry(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(timeLayout)
}

// ruleColumns are what a rule is read from.
const ruleColumns = `data, uses, revoked_at, revoked_by`

// scanRule reads a rule from ruleColumns.
func scanRule(scan func(...any) error) (session.Rule, error) {
	var data []byte
	var uses int64
	var revokedAt, revokedBy string
	if err := scan(&data, &uses, &revokedAt, &revokedBy); err != nil {
		return session.Rule{}, err
	}
	var r session.Rule
	if err := json.Unmarshal(data, &r); err != nil {
		return session.Rule{}, fmt.Errorf("rule: %w: %v", store.ErrUnreadable, err)
	}
	r.Uses = uses
	if revokedAt != "" {
		at, err := time.Parse(timeLayout, revokedAt)
		if err != nil {
			return session.Rule{}, fmt.Errorf("rule %s revoked_at: %w", r.ID, store.ErrUnreadable)
		}
		by := store.DecodeActor(revokedBy)
		r.RevokedAt, r.RevokedBy = &at, &by
	}
	return r, nil
}

// Rules implements store.Rules. The live rules of a tenant's tools (what
// a runner asks with each model reply) are a prepared statement per tool.
func (s *Store) Rules(ctx context.Context, q store.RuleQuery) ([]session.Rule, error) {
	if !q.AllTenants && !q.LiveAt.IsZero() && len(q.Tools) > 0 && len(q.Tools) <= 4 {
		var out []session.Rule
		for _, tool := range q.Tools {
			rows, err := s.liveRulesStmt.QueryContext(ctx, q.Tenant, tool, q.LiveAt.UTC().Format(timeLayout), q.Max()-len(out))
			if err != nil {
				return nil, fmt.Errorf("sqlite rules: %w", err)
			}
			if out, err = scanRules(rows, out); err != nil {
				return nil, err
			}
			if len(out) >= q.Max() {
				break
			}
		}
		slices.SortStableFunc(out, func(a, b session.Rule) int { // oldest grant first, as one query orders them
			return cmp.Or(a.GrantedAt.Compare(b.GrantedAt), strings.Compare(a.ID, b.ID))
		})
		return out, nil
	}
	query := `SELECT ` + ruleColumns + ` FROM rules WHERE 1=1`
	var args []any
	if !q.AllTenants {
		query += ` AND tenant=?`
		args = append(args, q.Tenant)
	}
	if len(q.Tools) > 0 {
		query += ` AND tool IN (?` + strings.Repeat(`,?`, len(q.Tools)-1) + `)`
		for _, t := range q.Tools {
			args = append(args, t)
		}
	}
	if !q.LiveAt.IsZero() {
		query += ` AND revoked_at='' AND (expires_at='' OR expires_at>?)`
		args = append(args, q.LiveAt.UTC().Format(timeLayout))
	}
	query += ` ORDER BY granted_at, id LIMIT ?`
	args = append(args, q.Max())
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite rules: %w", err)
	}
	return scanRules(rows, nil)
}

// scanRules appends the rules of rows to out, and closes rows.
func scanRules(rows *sql.Rows, out []session.Rule) ([]session.Rule, error) {
	defer rows.Close()
	for rows.Next() {
		r, err := scanRule(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("sqlite rules: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite rules: %w", err)
	}
	return out, nil
}

// Rule implements store.Rules.
func (s *Store) Rule(ctx context.Context, id string) (session.Rule, error) {
	r, err := scanRule(s.db.QueryRowContext(ctx, `SELECT `+ruleColumns+` FROM rules WHERE id=?`, id).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("rule %s: %w", id, store.ErrNotFound)
	}
	return r, err
}

// RevokeRule implements store.Rules.
func (s *Store) RevokeRule(ctx context.Context, id string, by session.Actor, at time.Time) (session.Rule, error) {
	if _, err := s.exec(ctx, `UPDATE rules SET revoked_at=?, revoked_by=? WHERE id=? AND revoked_at=''`,
		at.UTC().Format(timeLayout), store.EncodeActor(by), id); err != nil {
		return session.Rule{}, fmt.Errorf("sqlite revoke rule %s: %w", id, err)
	}
	return s.Rule(ctx, id)
}

// decisionColumns are what a decision record is read from.
const decisionColumns = `id, tenant, session_id, agent, tool, shape, action, edited, expired, rule, approver, name, asked_at, decided_at, detail`

func scanDecision(scan func(...any) error) (store.DecisionRecord, error) {
	var d store.DecisionRecord
	var asked, decided int64
	var detail []byte
	if err := scan(&d.ID, &d.Tenant, &d.SessionID, &d.Agent, &d.Tool, &d.Shape, &d.Action, &d.Edited, &d.Expired, &d.Rule, &d.Approver, &d.Name,
		&asked, &decided, &detail); err != nil {
		return d, err
	}
	d.DecidedAt = time.UnixMicro(decided).UTC()
	if asked != 0 {
		d.AskedAt = time.UnixMicro(asked).UTC()
	}
	if len(detail) > 0 {
		d.Detail = detail
	}
	return d, nil
}

// Decisions implements store.Decisions.
func (s *Store) Decisions(ctx context.Context, q store.DecisionQuery, each func(*store.DecisionRecord) bool) error {
	cols, scanOne := decisionColumns, scanDecision
	if q.Lean {
		cols, scanOne = leanDecisionColumns, scanLeanDecision
	}
	query := `SELECT ` + cols + ` FROM decisions WHERE 1=1`
	var args []any
	if !q.AllTenants {
		query += ` AND tenant=?`
		args = append(args, q.Tenant)
	}
	if !q.Since.IsZero() {
		query += ` AND decided_at>=?`
		args = append(args, micros(q.Since))
	}
	if !q.Until.IsZero() {
		query += ` AND decided_at<?`
		args = append(args, micros(q.Until))
	}
	query += ` ORDER BY decided_at`
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("sqlite decisions: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		d, err := scanOne(rows.Scan)
		if err != nil {
			return fmt.Errorf("sqlite decisions: %w", err)
		}
		if !each(&d) {
			return nil
		}
	}
	return rows.Err()
}

// LatestDecisions implements store.Decisions.
func (s *Store) LatestDecisions(ctx context.Context, key store.DecisionKey, limit int) ([]store.DecisionRecord, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+decisionColumns+` FROM decisions WHERE tenant=? AND agent=? AND tool=? AND shape=?
		ORDER BY decided_at DESC LIMIT ?`, key.Tenant, key.Agent, key.Tool, key.Shape, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite latest decisions: %w", err)
	}
	defer rows.Close()
	var out []store.DecisionRecord
	for rows.Next() {
		d, err := scanDecision(rows.Scan)
		if err != nil {
			return nil, fmt.Errorf("sqlite latest decisions: %w", err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// micros is t in microseconds since 1970; 0 for the zero time.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// leanDecisionColumns are what a lean walk reads (store.DecisionQuery.Lean).
const leanDecisionColumns = `agent, tool, action, edited, expired, rule, name, asked_at, decided_at`

func scanLeanDecision(scan func(...any) error) (store.DecisionRecord, error) {
	var d store.DecisionRecord
	var asked, decided int64
	if err := scan(&d.Agent, &d.Tool, &d.Action, &d.Edited, &d.Expired, &d.Rule, &d.Name, &asked, &decided); err != nil {
		return d, err
	}
	d.DecidedAt = time.UnixMicro(decided).UTC()
	if asked != 0 {
		d.AskedAt = time.UnixMicro(asked).UTC()
	}
	return d, nil
}
