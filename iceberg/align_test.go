package iceberg

import (
	"reflect"
	"testing"
)

// An attnum present in both maps under another name is a rename; a new
// attnum is an added column, a vanished one a dropped column.
func TestProvenRenames(t *testing.T) {
	recorded := map[int]string{1: "id", 2: "a", 3: "b", 4: "x"}
	current := map[int]string{1: "id", 2: "a", 3: "c", 5: "x"}
	if got, want := provenRenames(recorded, current), map[string]string{"b": "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("provenRenames(%v, %v) = %v, want %v", recorded, current, got, want)
	}
	if got := provenRenames(nil, current); len(got) != 0 {
		t.Errorf("provenRenames(nil, %v) = %v, want none", current, got)
	}
}

// The reset a copy records reads back as the resolution it stands for.
func TestSchemaResetResolution(t *testing.T) {
	r := schemaReset{Renames: map[string]string{"b": "c"}, Replace: []string{"e", "f"}, Columns: []string{"id", "c", "f"}}
	res := r.resolution()
	if res.Renames["b"] != "c" || !res.Replace["e"] || !res.Replace["f"] || res.Replace["c"] || res.All {
		t.Errorf("resolution() = %+v", res)
	}
}
