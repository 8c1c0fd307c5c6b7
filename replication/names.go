package replication

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// maxSlotName is PostgreSQL's limit on a slot name (NAMEDATALEN - 1).
const maxSlotName = 63

// slotPrefix starts every slot name the bridge derives.
const slotPrefix = "pg2iceberg_"

// validSlotChar reports whether PostgreSQL allows c in a slot name.
func validSlotChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}

// ValidateSlotName checks a slot name as PostgreSQL does: lower-case
// letters, digits and underscores, at most 63 bytes.
func ValidateSlotName(slot string) error {
	if slot == "" || len(slot) > maxSlotName {
		return fmt.Errorf("slot name %q: give --slot 1 to %d characters", slot, maxSlotName)
	}
	for i := 0; i < len(slot); i++ {
		if !validSlotChar(slot[i]) {
			return fmt.Errorf("slot name %q: PostgreSQL allows only lower-case letters, digits and _ in a slot name: give another --slot", slot)
		}
	}
	return nil
}

// SlotName derives the slot of a publication: pg2iceberg_<publication>
// when that is a valid slot name. Otherwise every character but a-z, 0-9
// and _ becomes _ (upper case is lowered), the name is cut to fit 63 bytes
// with an underscore and 8 hex digits of the publication's FNV-1a hash, so
// that two publications such as "Shop-Pub" and "shop_pub" never share a
// slot: "Shop-Pub" becomes pg2iceberg_shop_pub_bd950fe3.
func SlotName(publication string) string {
	name := slotPrefix + publication
	if ValidateSlotName(name) == nil {
		return name
	}
	b := []byte(strings.ToLower(name))
	for i := range b {
		if !validSlotChar(b[i]) {
			b[i] = '_'
		}
	}
	h := fnv.New32a()
	h.Write([]byte(publication))
	suffix := fmt.Sprintf("_%08x", h.Sum32())
	if len(b) > maxSlotName-len(suffix) {
		b = b[:maxSlotName-len(suffix)]
	}
	return string(b) + suffix
}

// publicationOption is pgoutput's publication_names option for one
// publication. pgoutput splits the value with SplitIdentifierString: a
// comma-separated list of identifiers, unquoted ones lower-cased, so the
// name is double-quoted (its " doubled) to be taken exactly, and the whole
// is a single-quoted string of the replication command (its ' doubled).
func publicationOption(publication string) string {
	ident := `"` + strings.ReplaceAll(publication, `"`, `""`) + `"`
	return "publication_names '" + strings.ReplaceAll(ident, "'", "''") + "'"
}

// PluginArgs are the pgoutput options the stream starts replication with:
// protocol 2, the publication, logical messages, and streaming of large
// transactions. The bench's reference consumer asks for the same.
func PluginArgs(publication string) []string {
	return []string{
		"proto_version '2'",
		publicationOption(publication),
		"messages 'true'",
		"streaming 'on'",
	}
}
