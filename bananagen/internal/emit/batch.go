package emit

import (
	"github.com/dave/jennifer/jen"

	"github.com/bananas-go/bananas/bananagen/internal/model"
)

// handleBatch registers a batch task: runtime.HandleBatch with its batch
// size and linger, and the function adapted to
// func(ctx, []A) ([]R, []error, error) — a whole-batch error, or one per
// job, with a result per job when the task has one.
func handleBatch(p model.Package, t model.Task) jen.Code {
	opts := jen.Values(jen.Id("Size").Op(":").Lit(t.Batch), jen.Id("Linger").Op(":").Add(duration(t.Linger)))
	call := jen.Id(t.Func).Call(jen.Id("ctx"), jen.Id("args"))
	var body jen.Code
	switch t.BatchShape {
	case model.BatchError:
		body = jen.Return(jen.Nil(), jen.Nil(), call)
	case model.BatchErrors:
		body = jen.Return(jen.Nil(), call, jen.Nil())
	default:
		body = jen.List(jen.Id("results"), jen.Id("errs")).Op(":=").Add(call).Line().Return(jen.Id("results"), jen.Id("errs"), jen.Nil())
	}
	fn := jen.Func().Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("args").Index().Add(typ(p, t.Args))).
		Params(jen.Index().Add(typ(p, t.Result)), jen.Index().Error(), jen.Error()).Block(body)
	return rt("HandleBatch").Call(jen.Id("w"), jen.Id(t.Stub), rt("Batch").Add(opts), fn)
}
