// Package openapi builds the OpenAPI 3.1 document of the HTTP API
// (served at GET /api/v1/openapi.json), in which every registered task's
// args and result are JSON Schemas, so that a client generated in any
// language submits typed jobs and reads typed results.
//
// # What it owns, and what it must not know
//
// openapi owns two things: the translation of a Go type into the JSON Schema
// (2020-12, the dialect of OpenAPI 3.1) of the JSON that encoding/json reads
// and writes for it, and the list of paths, parameters, status codes and
// security of the API as the api package serves them. A schema never accepts
// a value the server refuses: struct objects are closed (the args decoder
// refuses unknown keys and keys in the wrong case), so a client validating
// against it fails before it sends. The schema may be narrower than the
// server, never wider.
//
// It knows tasks only as a Task value (a wire name, defaults and Go types)
// and the bodies of answers only as the reflect types the caller passes in
// Options.Shapes. It must not import the runtime, queue or api packages: the
// runtime builds the Task list and the shapes, and the api package serves the
// bytes.
package openapi
