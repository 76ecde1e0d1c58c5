package admin

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"testing"
)

// auditReads are the methods of Admin that change nothing, so the audit log
// leaves them out. Every other method must be one audited records: a method
// added to Admin is either named here or audited, never passed through
// unrecorded by the embedded interface.
var auditReads = map[string]bool{
	"ArgsSchemas": true, "Audit": true, "AuditLog": true, "Cron": true, "Flows": true, "History": true,
	"Job": true, "Jobs": true, "Limits": true, "OpenAPI": true, "Ready": true, "Result": true,
	"Routes": true, "Schedule": true, "Schedules": true, "Shards": true, "Stats": true, "Tasks": true,
	"Workers": true, "Workflow": true, "Workflows": true,
}

func TestAudited_EveryActionOfAdminIsRecorded(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "audit.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 {
			continue
		}
		if id, ok := fd.Recv.List[0].Type.(*ast.Ident); ok && id.Name == "audited" && fd.Name.IsExported() {
			recorded[fd.Name.Name] = true
		}
	}
	at := reflect.TypeOf((*Admin)(nil)).Elem()
	for i := 0; i < at.NumMethod(); i++ {
		m := at.Method(i).Name
		if auditReads[m] == recorded[m] {
			t.Errorf("Admin.%s: audited records it %v and auditReads names it a read %v; exactly one must hold", m, recorded[m], auditReads[m])
		}
	}
}
