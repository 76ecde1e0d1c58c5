// A workflow whose next step takes what its predecessor does not return:
// parse takes []byte, and count returns int. It must not compile.
package main

import "github.com/bananas-go/bananas/runtime"

var (
	count = runtime.NewTask[string, int]("count")
	parse = runtime.NewTask[[]byte, int]("parse")
)

func main() {
	_ = runtime.Then(count.Step("text"), parse)
}
