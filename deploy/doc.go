// Package deploy holds the files of the Docker Compose stack
// (docker-compose.yml at the repository's top; docs/docker-compose.md).
// Its only Go is ShopSQL, the sample shop that the stack's PostgreSQL and
// `make demo` both start from.
package deploy

import _ "embed"

// ShopSQL creates the schema shop with its tables and rows and the
// publication shop_pub (postgres/shop.sql).
//
//go:embed postgres/shop.sql
var ShopSQL string
