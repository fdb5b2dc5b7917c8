// Package execrun is sbx exec's glue: it checks a sandbox-tool request with
// package gate, runs it with runner under the tool's fixed limits, and
// shapes the outcome into a gate.Result. gate stays pure of runner (it is
// the request's rules and the result's wire format); runner knows nothing
// of gate.
package execrun
