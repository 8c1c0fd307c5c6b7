package rest_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/pg2iceberg/pg2iceberg/iceberg"
	"github.com/pg2iceberg/pg2iceberg/iceberg/rest"
)

func TestStorageConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  iceberg.CatalogConfig
		want map[string]string
	}{
		{"local", iceberg.CatalogConfig{Warehouse: "/var/lib/wh", S3Region: "us-east-1"}, map[string]string{}},
		{"aws", iceberg.CatalogConfig{Warehouse: "s3://lake/wh", S3Region: "eu-west-1"}, map[string]string{
			"s3.region": "eu-west-1", "client.region": "eu-west-1",
			"s3.path-style-access": "false", "s3.force-virtual-addressing": "true",
		}},
		{"minio", iceberg.CatalogConfig{Warehouse: "s3://lake/wh", S3Region: "us-east-1", S3Endpoint: "http://127.0.0.1:9000", S3PathStyle: true}, map[string]string{
			"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "us-east-1", "client.region": "us-east-1",
			"s3.path-style-access": "true", "s3.force-virtual-addressing": "false",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := rest.StorageConfig(tc.cfg); !maps.Equal(got, tc.want) {
				t.Errorf("StorageConfig(%+v) = %v, want %v", tc.cfg, got, tc.want)
			}
		})
	}
}

func TestVendedCredentials(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		want    map[string]string
		wantErr bool
	}{
		{"none", map[string]string{}, nil, true},
		{"no secret", map[string]string{"AWS_ACCESS_KEY_ID": "id"}, nil, true},
		{"keys", map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "sec"},
			map[string]string{"s3.access-key-id": "id", "s3.secret-access-key": "sec"}, false},
		{"session", map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "sec", "AWS_SESSION_TOKEN": "tok"},
			map[string]string{"s3.access-key-id": "id", "s3.secret-access-key": "sec", "s3.session-token": "tok"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rest.VendedCredentials(func(k string) string { return tc.env[k] })
			if (err != nil) != tc.wantErr || !maps.Equal(got, tc.want) {
				t.Errorf("VendedCredentials(%v) = %v, %v; want %v (error %t)", tc.env, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestCheckListen(t *testing.T) {
	cases := []struct {
		addr     string
		token    bool
		explicit bool
		warn     bool
		err      string
	}{
		{"127.0.0.1:8181", false, false, false, ""},
		{"localhost:8181", false, false, false, ""},
		{"[::1]:8181", false, false, false, ""},
		{"127.0.0.2:0", false, false, false, ""},
		{"0.0.0.0:8181", true, false, false, ""},
		{"0.0.0.0:8181", false, false, false, "refusing"},
		{":8181", false, false, false, "refusing"},
		{"10.1.2.3:8181", false, false, false, "refusing"},
		{"0.0.0.0:8181", false, true, true, ""},
		{":8181", false, true, true, ""},
		{"127.0.0.1", false, false, false, "listen address"},
	}
	for _, tc := range cases {
		warn, err := rest.CheckListen(tc.addr, tc.token, tc.explicit)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("CheckListen(%q, %t, %t) = %v, want no error", tc.addr, tc.token, tc.explicit, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("CheckListen(%q, %t, %t) = %v, want an error containing %q", tc.addr, tc.token, tc.explicit, err, tc.err)
		case (warn != "") != tc.warn:
			t.Errorf("CheckListen(%q, %t, %t) warning = %q, want warning %t", tc.addr, tc.token, tc.explicit, warn, tc.warn)
		}
	}
}

// Vended credentials come with the table, in config and storage-credentials.
func TestLoadTableVends(t *testing.T) {
	f := newFixture(t)
	wh, _ := f.cfg.WarehouseURI()
	srv, err := rest.New(f.cat, rest.Config{Warehouse: wh, Token: "t", Credentials: map[string]string{"s3.access-key-id": "AK", "s3.secret-access-key": "SK"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, srv)
	_, _, body := do(t, "GET", ts.URL+"/v1/pg2iceberg/namespaces/shop/tables/orders", "Bearer t")
	for _, want := range []string{`"config":{"s3.access-key-id":"AK","s3.secret-access-key":"SK"}`, `"storage-credentials":[{"prefix":"` + f.table.Location() + `"`} {
		if !strings.Contains(body, want) {
			t.Errorf("load table = %s, want it to contain %s", body, want)
		}
	}
}
