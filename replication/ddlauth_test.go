package replication

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

func TestVerifyDDL(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	body := []byte(`{"relid": 16384, "tag": "DROP TABLE", "schema": "public", "table": "t"}`)
	good := signDDL(key, 1234, body)
	flipped := bytes.Clone(good)
	flipped[len(flipped)-2] ^= 1
	for _, tc := range []struct {
		name    string
		key     []byte
		xid     uint32
		content []byte
		want    error
	}{
		{"signed for this transaction", key, 1234, good, nil},
		{"another transaction", key, 1235, good, errBadSignature},
		{"another key", bytes.Repeat([]byte{8}, 32), 1234, good, errBadSignature},
		{"body changed", key, 1234, flipped, errBadSignature},
		{"appended to", key, 1234, append(bytes.Clone(good), ` `...), errBadSignature},
		{"unsigned", key, 1234, body, errUnsigned},
		{"short signature", key, 1234, append([]byte("sig:00\n"), body...), errUnsigned},
		{"signature not hex", key, 1234, append(append([]byte("sig:"), bytes.Repeat([]byte("zz"), 32)...), append([]byte("\n"), body...)...), errUnsigned},
		{"empty", key, 1234, nil, errUnsigned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := verifyDDL(tc.key, tc.xid, tc.content)
			if !errors.Is(err, tc.want) {
				t.Fatalf("verifyDDL = %q, %v; want error %v", got, err, tc.want)
			}
			if err == nil && !bytes.Equal(got, body) {
				t.Errorf("verifyDDL body = %q, want %q", got, body)
			}
		})
	}
}

// A failed verification reads the key again once per transaction: after
// setup (re)installs the capture, and not once per forged message.
func TestDDLAuthReload(t *testing.T) {
	ctx := context.Background()
	key := bytes.Repeat([]byte{7}, 32)
	var loads int
	var cur []byte
	a := ddlAuth{load: func(context.Context) ([]byte, error) {
		loads++
		if cur == nil {
			return nil, &PreflightError{Problem: notInstalled}
		}
		return cur, nil
	}}
	body := []byte(`{}`)
	for i := 0; i < 3; i++ {
		if _, ignored, err := a.verify(ctx, 1, signDDL(key, 1, body)); err != nil || ignored == nil {
			t.Fatalf("verify without a key = %v, %v; want ignored", ignored, err)
		}
	}
	if loads != 1 {
		t.Errorf("%d key reads in one transaction, want 1", loads)
	}
	cur = key
	a.reloaded = false // the next transaction
	if got, ignored, err := a.verify(ctx, 2, signDDL(key, 2, body)); err != nil || ignored != nil || !bytes.Equal(got, body) {
		t.Fatalf("verify after setup = %q, %v, %v; want the body", got, ignored, err)
	}
	a.reloaded = false
	if _, ignored, _ := a.verify(ctx, 3, signDDL(bytes.Repeat([]byte{9}, 32), 3, body)); !errors.Is(ignored, errBadSignature) {
		t.Errorf("verify with another key: %v, want errBadSignature", ignored)
	}
	if loads != 3 {
		t.Errorf("%d key reads, want 3", loads)
	}
	a.load = func(context.Context) ([]byte, error) { return nil, errors.New("conn closed") }
	a.reloaded, a.key = false, nil
	if _, _, err := a.verify(ctx, 4, signDDL(key, 4, body)); err == nil {
		t.Errorf("verify with a broken connection: no error, want one (not an ignored event)")
	}
}
