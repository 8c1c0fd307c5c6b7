// Package rest serves the bridge's warehouse as a read-only Iceberg REST
// catalog (apache/iceberg open-api/rest-catalog-open-api.yaml), so engines
// such as Spark, Trino, pyiceberg and DuckDB attach with a URI and nothing
// else.
//
// Role in the flow: it sits beside the pipeline, not in it. A Server reads
// through the same catalog the bridge commits to (iceberg.OpenCatalog: the
// embedded SQLite catalog, a SQL catalog in Postgres, or another REST
// catalog) and answers
//
//	GET  /v1/config
//	GET  /v1/{prefix}/namespaces                         list
//	GET  /v1/{prefix}/namespaces/{namespace}             load
//	HEAD /v1/{prefix}/namespaces/{namespace}             exists
//	GET  /v1/{prefix}/namespaces/{namespace}/tables      list
//	GET  /v1/{prefix}/namespaces/{namespace}/tables/{t}  load
//	HEAD /v1/{prefix}/namespaces/{namespace}/tables/{t}  exists
//
// with and without the {prefix} segment. Every write (POST, PUT, DELETE,
// PATCH) answers 403 with an ErrorModel saying the catalog is read-only;
// metrics reports are accepted and dropped.
//
// Goroutines: none. Server is an http.Handler; main owns the http.Server
// and its goroutines.
//
// Invariants:
//   - With a token configured, a request without "Authorization: Bearer
//     <token>" gets 401 and a body that does not depend on the request: no
//     namespace, table or location leaks.
//   - loadTable's config carries storage settings (endpoint, region,
//     addressing style), never secret keys, unless Config.TableConfig was
//     built with credential vending switched on explicitly.
//   - Nothing here writes to the catalog or the warehouse.
package rest
