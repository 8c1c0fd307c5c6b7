package rest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/pg2iceberg/pg2iceberg/decode"
	"github.com/pg2iceberg/pg2iceberg/history"
)

// endpoints are the routes /v1/config advertises; clients that read them
// (Iceberg Java 1.7+, iceberg-go, pyiceberg) then refuse writes locally.
var endpoints = []string{
	"GET /v1/{prefix}/namespaces",
	"GET /v1/{prefix}/namespaces/{namespace}",
	"HEAD /v1/{prefix}/namespaces/{namespace}",
	"GET /v1/{prefix}/namespaces/{namespace}/tables",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}/credentials",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
	"GET /v1/{prefix}/namespaces/{namespace}/views",
	"GET /v1/{prefix}/namespaces/{namespace}/views/{view}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/views/{view}",
}

type configResponse struct {
	Defaults  map[string]string `json:"defaults"`
	Overrides map[string]string `json:"overrides"`
	Endpoints []string          `json:"endpoints"`
}

type identifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

type listNamespacesResponse struct {
	Namespaces    [][]string `json:"namespaces"`
	NextPageToken string     `json:"next-page-token,omitempty"`
}

type namespaceResponse struct {
	Namespace  []string          `json:"namespace"`
	Properties map[string]string `json:"properties"`
}

type listTablesResponse struct {
	Identifiers   []identifier `json:"identifiers"`
	NextPageToken string       `json:"next-page-token,omitempty"`
}

type storageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

type loadTableResponse struct {
	MetadataLocation   string              `json:"metadata-location"`
	Metadata           json.RawMessage     `json:"metadata"`
	Config             map[string]string   `json:"config"`
	StorageCredentials []storageCredential `json:"storage-credentials,omitempty"`
}

type loadCredentialsResponse struct {
	StorageCredentials []storageCredential `json:"storage-credentials"`
}

// config answers GET /v1/config. A warehouse parameter must name this
// catalog or its warehouse: a client pointed at the wrong server learns so
// at once instead of at its first table.
func (s *Server) config(w http.ResponseWriter, r *http.Request) {
	wh := r.URL.Query().Get("warehouse")
	prefix := s.cfg.Prefix
	if wh == ConsistentWarehouse {
		cut, err := s.currentCut(r.Context())
		if errors.Is(err, history.ErrNoCut) {
			writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableException", err.Error())
			return
		}
		if err != nil {
			s.fail(w, r, fmt.Errorf("find the consistent cut: %w", err))
			return
		}
		prefix = cutPrefixFor(cut)
	} else if wh != "" && !s.serves(wh) {
		writeError(w, http.StatusBadRequest, "BadRequestException",
			fmt.Sprintf("warehouse %q is not served here: this catalog is %q over %s; leave warehouse unset, use one of those, or %q to read every table at one consistent cut", wh, s.cfg.Name, s.cfg.Warehouse, ConsistentWarehouse))
		return
	}
	writeJSON(w, http.StatusOK, configResponse{
		Defaults:  map[string]string{},
		Overrides: map[string]string{"prefix": prefix},
		Endpoints: endpoints,
	})
}

func (s *Server) serves(warehouse string) bool {
	trim := func(v string) string { return strings.TrimSuffix(v, "/") }
	wh := trim(warehouse)
	if wh == s.cfg.Name || wh == s.cfg.Prefix || (s.cfg.Warehouse != "" && wh == trim(s.cfg.Warehouse)) {
		return true
	}
	// A local warehouse may be named by its path, or file:/path as Java
	// spells it.
	local := strings.TrimPrefix(trim(s.cfg.Warehouse), "file://")
	return strings.HasPrefix(s.cfg.Warehouse, "file://") && (wh == local || wh == "file:"+local)
}

func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) {
	var parent []string
	if p := r.URL.Query().Get("parent"); p != "" {
		parent = parseNamespace(p)
	}
	all, err := s.cat.ListNamespaces(r.Context(), parent)
	if err != nil {
		s.fail(w, r, fmt.Errorf("list namespaces: %w", err))
		return
	}
	// Only the level right below parent, each once: a catalog may list
	// every descendant, and the parent itself.
	var out [][]string
	for _, ns := range all {
		if len(ns) <= len(parent) || !slices.Equal(ns[:len(parent)], parent) {
			continue
		}
		child := slices.Clone(ns[:len(parent)+1])
		if !slices.ContainsFunc(out, func(o []string) bool { return slices.Equal(o, child) }) {
			out = append(out, child)
		}
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(strings.Join(a, "\x1f"), strings.Join(b, "\x1f")) })
	page, next, err := paginate(r, out)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestException", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, listNamespacesResponse{Namespaces: page, NextPageToken: next})
}

func (s *Server) loadNamespace(w http.ResponseWriter, r *http.Request, ns []string) {
	props, err := s.cat.LoadNamespaceProperties(r.Context(), ns)
	if err != nil {
		s.fail(w, r, fmt.Errorf("load namespace %s: %w", strings.Join(ns, "."), err))
		return
	}
	out := map[string]string{}
	for k, v := range props {
		out[k] = v
	}
	writeJSON(w, http.StatusOK, namespaceResponse{Namespace: ns, Properties: out})
}

func (s *Server) namespaceExists(w http.ResponseWriter, r *http.Request, ns []string) {
	ok, err := s.cat.CheckNamespaceExists(r.Context(), ns)
	if err == nil && !ok {
		err = catalog.ErrNoSuchNamespace
	}
	if err != nil {
		s.fail(w, r, fmt.Errorf("namespace %s: %w", strings.Join(ns, "."), err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listTables(w http.ResponseWriter, r *http.Request, ns []string) {
	ids := []identifier{}
	for ident, err := range s.cat.ListTables(r.Context(), ns) {
		if err != nil {
			s.fail(w, r, fmt.Errorf("list tables of %s: %w", strings.Join(ns, "."), err))
			return
		}
		ids = append(ids, identifier{Namespace: catalog.NamespaceFromIdent(ident), Name: catalog.TableNameFromIdent(ident)})
	}
	slices.SortFunc(ids, func(a, b identifier) int { return strings.Compare(a.Name, b.Name) })
	page, next, err := paginate(r, ids)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequestException", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, listTablesResponse{Identifiers: page, NextPageToken: next})
}

// loadTable serves a table's metadata; pin, when not nil, is the LSN of
// the session's consistent cut, at which the table is served (pinMetadata).
func (s *Server) loadTable(w http.ResponseWriter, r *http.Request, ident table.Identifier, pin *decode.LSN) {
	if snaps := r.URL.Query().Get("snapshots"); snaps != "" && snaps != "all" && snaps != "refs" {
		writeError(w, http.StatusBadRequest, "BadRequestException", fmt.Sprintf("snapshots=%q: use all or refs", snaps))
		return
	}
	tbl, err := s.cat.LoadTable(r.Context(), ident)
	if err != nil {
		s.fail(w, r, fmt.Errorf("load table %s: %w", strings.Join(ident, "."), err))
		return
	}
	// A metadata file is never rewritten, so its location (with the
	// snapshots mode) names the response: a client holding it gets 304.
	var snap *table.Snapshot
	mode := r.URL.Query().Get("snapshots")
	if pin != nil {
		if snap, err = history.Resolve(tbl, history.Point{Kind: history.LSN, LSN: *pin}); err != nil {
			writeError(w, http.StatusNotFound, "NoSuchTableException",
				fmt.Sprintf("%v: this table cannot be read at the session's cut; start a new catalog session for a newer cut", err))
			return
		}
		mode += "\x00cut " + pin.String()
	}
	etag := tableETag(tbl.MetadataLocation(), mode)
	w.Header().Set("ETag", etag)
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	// The metadata as iceberg-go writes it: the same JSON as the file at
	// metadata-location, without reading that file a second time; with
	// snapshots=refs, only the snapshots a branch or tag points at.
	meta, err := json.Marshal(tbl.Metadata())
	if err == nil && snap != nil {
		meta, err = pinMetadata(meta, snap)
	} else if err == nil && r.URL.Query().Get("snapshots") == "refs" {
		meta, err = refsOnly(meta, tbl.Metadata())
	}
	if err != nil {
		s.fail(w, r, fmt.Errorf("encode metadata of %s: %w", strings.Join(ident, "."), err))
		return
	}
	cfg := map[string]string{}
	for k, v := range s.cfg.TableConfig {
		cfg[k] = v
	}
	for k, v := range s.cfg.Credentials {
		cfg[k] = v
	}
	writeJSON(w, http.StatusOK, loadTableResponse{
		MetadataLocation:   tbl.MetadataLocation(),
		Metadata:           meta,
		Config:             cfg,
		StorageCredentials: s.credentials(tbl.Location()),
	})
}

// tableETag is the strong entity tag of a loadTable response.
func tableETag(metadataLocation, snapshots string) string {
	if snapshots == "" {
		snapshots = "all"
	}
	sum := sha256.Sum256([]byte(metadataLocation + "\x00" + snapshots))
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// etagMatch reports whether an If-None-Match header names etag (or is *).
// Weak tags compare equal to strong ones here (RFC 9110's weak comparison,
// which If-None-Match uses).
func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// credentials are the vended storage credentials for a table at location,
// or nil when vending is off.
func (s *Server) credentials(location string) []storageCredential {
	if len(s.cfg.Credentials) == 0 {
		return nil
	}
	return []storageCredential{{Prefix: location, Config: s.cfg.Credentials}}
}

func (s *Server) tableExists(w http.ResponseWriter, r *http.Request, ident table.Identifier) {
	ok, err := s.cat.CheckTableExists(r.Context(), ident)
	if err == nil && !ok {
		err = catalog.ErrNoSuchTable
	}
	if err != nil {
		s.fail(w, r, fmt.Errorf("table %s: %w", strings.Join(ident, "."), err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) loadCredentials(w http.ResponseWriter, r *http.Request, ident table.Identifier) {
	tbl, err := s.cat.LoadTable(r.Context(), ident)
	if err != nil {
		s.fail(w, r, fmt.Errorf("load table %s: %w", strings.Join(ident, "."), err))
		return
	}
	creds := s.credentials(tbl.Location())
	if creds == nil {
		creds = []storageCredential{}
	}
	writeJSON(w, http.StatusOK, loadCredentialsResponse{StorageCredentials: creds})
}

// paginate serves one page when the client asks for pageSize; the page
// token is the offset of the next page.
func paginate[T any](r *http.Request, all []T) ([]T, string, error) {
	q := r.URL.Query()
	start := 0
	if tok := q.Get("pageToken"); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n > len(all) {
			return nil, "", fmt.Errorf("pageToken %q is not one this server issued", tok)
		}
		start = n
	}
	size := len(all) - start
	if ps := q.Get("pageSize"); ps != "" {
		n, err := strconv.Atoi(ps)
		if err != nil || n < 1 {
			return nil, "", fmt.Errorf("pageSize %q: use a positive integer", ps)
		}
		size = min(n, size)
	}
	page := all[start : start+size]
	if page == nil {
		page = []T{}
	}
	next := ""
	if start+size < len(all) {
		next = strconv.Itoa(start + size)
	}
	return page, next, nil
}

// fail answers a catalog error: 404 for what does not exist, 500 for the
// rest (logged).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable):
		writeError(w, http.StatusNotFound, "NoSuchTableException", err.Error())
	case errors.Is(err, catalog.ErrNoSuchNamespace):
		writeError(w, http.StatusNotFound, "NoSuchNamespaceException", err.Error())
	case errors.Is(err, catalog.ErrInvalidIdentifier):
		writeError(w, http.StatusBadRequest, "BadRequestException", err.Error())
	default:
		s.log.Error("catalog request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		writeError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
	}
}

// refsOnly is the metadata JSON raw with only the snapshots that meta's
// refs (branches, main included, and tags) point at: what a client that
// asks for snapshots=refs gets, and loads the rest when it needs them. The
// rest of the metadata, the refs and the snapshot log included, is kept.
func refsOnly(raw []byte, meta table.Metadata) ([]byte, error) {
	keep := map[int64]bool{}
	for _, ref := range meta.Refs() {
		keep[ref.SnapshotID] = true
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	var snaps []json.RawMessage
	if err := json.Unmarshal(doc["snapshots"], &snaps); err != nil && doc["snapshots"] != nil {
		return nil, err
	}
	kept := []json.RawMessage{}
	for _, s := range snaps {
		var id struct {
			ID int64 `json:"snapshot-id"`
		}
		if err := json.Unmarshal(s, &id); err != nil {
			return nil, err
		}
		if keep[id.ID] {
			kept = append(kept, s)
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	doc["snapshots"] = b
	return json.Marshal(doc)
}
