package mysqlstore

import (
	"bytes"
	"context"
	"database/sql"
	neturl "net/url"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"anykv/internal/engine"
)

// testServerCharsetCannotInject: the engine sends keys and values as escaped literals in its SQL (the driver
// interpolates them, for multi-statement queries), which is safe only if the server reads the SQL in a character
// set where no character's bytes hold a backslash. A server that sets its sessions' character set to GBK (here
// init_connect, which runs for every user without SUPER; also character-set-server with
// skip-character-set-client-handshake) read the escape of a quote after 0xbf as part of a GBK character, so a
// value ended the literal and the rest of it ran as SQL. Until 2026-12-02 the engine kept the server's choice;
// now every session sets its own (SET NAMES utf8mb4), and the value is stored as sent.
func testServerCharsetCannotInject(t *testing.T, server string) {
	url := freshDB(t, server)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	db := strings.TrimPrefix(u.Path, "/")
	admin := sqlDB(t, url)
	var sock string // root, who may grant, connects through the server's socket
	if err := admin.QueryRow("SELECT @@socket").Scan(&sock); err != nil {
		t.Fatal(err)
	}
	rcfg := mysql.NewConfig()
	rcfg.User, rcfg.Net, rcfg.Addr = "root", "unix", sock
	root, err := sql.Open("mysql", rcfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, q := range []string{
		"CREATE USER 'lim_" + db + "'@'127.0.0.1' IDENTIFIED BY 'pw'",
		"GRANT ALL PRIVILEGES ON " + db + ".* TO 'lim_" + db + "'@'127.0.0.1'",
		"SET GLOBAL init_connect = 'SET NAMES gbk'", // not run for admin, who has SUPER
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	defer root.Exec("SET GLOBAL init_connect = ''")
	u.User = neturl.UserPassword("lim_"+db, "pw")
	s := open(t, u.String())
	defer s.Close()
	ctx := context.Background()
	v := []byte("\xbf', 0, 0, 6); CREATE TABLE pwned (x INT); #")
	_, err = s.Apply(ctx, &engine.Batch{Now: 1, Muts: []engine.Mutation{{Op: engine.OpSet, Table: "t", Key: []byte("a"), Value: v}}})
	var n int
	if qerr := admin.QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = 'pwned'", db).Scan(&n); qerr != nil {
		t.Fatal(qerr)
	}
	if n != 0 {
		t.Fatalf("a value ran as SQL: table pwned created (SET answered %v)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if it, err := s.Get(ctx, "t", []byte("a"), 1); err != nil || !bytes.Equal(it.Value, v) {
		t.Fatalf("a = %q, %v; want %q", it.Value, err, v)
	}
}
