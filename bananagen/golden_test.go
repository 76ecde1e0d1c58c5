package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the want/ sections of testdata/bananagen/*.txtar")

// TestGolden runs bananagen on each txtar case in testdata/bananagen: the
// input files make a package in a fresh module, and the case's want/ section
// holds the expected bananas_gen.go or the expected errors (paths relative
// to the package, positions kept).
func TestGolden(t *testing.T) {
	t.Parallel()
	cases, err := filepath.Glob("../testdata/bananagen/*.txtar")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, path := range cases {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txtar"), func(t *testing.T) {
			t.Parallel()
			ar, err := txtar.ParseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			dir := writeModule(t, ar)
			var stdout, stderr bytes.Buffer
			code := run(dir, nil, &stdout, &stderr)

			var got []byte
			var wantName string
			for _, f := range ar.Files {
				if strings.HasPrefix(f.Name, "want/") {
					wantName = f.Name
				}
			}
			switch wantName {
			case "want/bananas_gen.go":
				if code != 0 {
					t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
				}
				got, err = os.ReadFile(filepath.Join(dir, "bananas_gen.go"))
				if err != nil {
					t.Fatal(err)
				}
			case "want/errors":
				if code != 1 {
					t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr.String())
				}
				if _, err := os.Stat(filepath.Join(dir, "bananas_gen.go")); err == nil {
					t.Fatal("a run with errors wrote bananas_gen.go")
				}
				got = []byte(strings.ReplaceAll(stderr.String(), dir+string(filepath.Separator), ""))
			default:
				t.Fatal("the case has no want/bananas_gen.go or want/errors section")
			}
			for i := range ar.Files {
				if ar.Files[i].Name != wantName {
					continue
				}
				if *update {
					ar.Files[i].Data = got
					if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				if !bytes.Equal(ar.Files[i].Data, got) {
					t.Fatalf("%s differs (run go test ./bananagen -run TestGolden -update to accept):\n--- got ---\n%s\n--- want ---\n%s", wantName, got, ar.Files[i].Data)
				}
			}
		})
	}
}

// writeModule writes the input files of a case (all but want/) into a new
// module and returns its directory.
func writeModule(t *testing.T, ar *txtar.Archive) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string][]byte{"go.mod": []byte("module example.com/golden\n\ngo 1.26\n")}
	for _, f := range ar.Files {
		if !strings.HasPrefix(f.Name, "want/") {
			files[f.Name] = f.Data
		}
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
