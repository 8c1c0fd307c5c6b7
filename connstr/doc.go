// Package connstr keeps the secrets of connection strings out of messages:
// the source's PostgreSQL connection string and the catalog's URL, in
// every form they are accepted (see Redact). It is pure: no I/O, no
// goroutines, no logging.
package connstr
