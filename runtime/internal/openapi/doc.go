// Package openapi builds the OpenAPI 3.1 document of the HTTP API
// (served at GET /api/v1/openapi.json), in which every registered task's
// args and result are JSON Schemas, so that a client generated in any
// language submits typed jobs and reads typed results.
//
// # What it owns, and what it must not know
//
// openapi owns two things: the translation of a Go type into the JSON Schema
// (2020-12, the dialect of OpenAPI 3.1) of the JSON that encoding/json reads
// and writes for it, and the Endpoint type: the description of one
// operation (method, path, parameters, body, answers and their Go types,
// and for an action the Button the dashboard shows it as) that the api package's table is made of, which it turns into the paths of
// the document. A schema never accepts
// a value the server refuses: struct objects are closed (the args decoder
// refuses unknown keys and keys in the wrong case), so a client validating
// against it fails before it sends. The schema may be narrower than the
// server, never wider.
//
// It knows tasks only as a Task value (a wire name, defaults and Go types)
// and the API only as the Endpoints the caller passes (api.Endpoints), whose
// answers are Go values: a value with a WireType method (the admin views)
// is described by the type WireType returns, the struct its MarshalJSON
// writes. It must not import the runtime, admin, queue or api packages: the
// runtime builds the Task list and passes the api package's table, and the
// api package serves the bytes.
package openapi
