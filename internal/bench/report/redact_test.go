package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestReportsHideTargetPasswords: a deployed PostgreSQL's or MariaDB's URL carries its password (bench deploy),
// and reports are shared and kept: text, HTML and JSON show the URL with the password as xxxxx, and the report's
// own targets keep the real URL (the driver connects with it).
func TestReportsHideTargetPasswords(t *testing.T) {
	rep := sample()
	rep.Targets[0].URL = "postgres://postgres:s3cretpw@127.0.0.1:7003/postgres"
	for name, write := range map[string]func(*bytes.Buffer) error{
		"text": func(b *bytes.Buffer) error { return WriteText(b, rep) },
		"html": func(b *bytes.Buffer) error { return WriteHTML(b, rep) },
		"json": func(b *bytes.Buffer) error { return WriteJSON(b, rep) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if out := b.String(); strings.Contains(out, "s3cretpw") || !strings.Contains(out, "postgres:xxxxx@127.0.0.1:7003") {
			t.Errorf("%s report: the password is shown, or the URL is missing", name)
		}
	}
	if rep.Targets[0].URL != "postgres://postgres:s3cretpw@127.0.0.1:7003/postgres" {
		t.Errorf("writing the reports changed the target's URL to %s", rep.Targets[0].URL)
	}
}
