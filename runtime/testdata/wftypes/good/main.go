// A workflow whose steps' types match: it compiles.
package main

import "github.com/bananas-go/bananas/runtime"

var (
	fetch = runtime.NewTask[string, []byte]("fetch")
	parse = runtime.NewTask[[]byte, int]("parse")
	sum   = runtime.NewTask[[]int, int]("sum")
)

func main() {
	a := runtime.Then(fetch.Step("https://example.com"), parse)
	b := runtime.Then(fetch.Step("https://example.org"), parse)
	_ = runtime.Then(runtime.Gather(a, b), sum)
}
