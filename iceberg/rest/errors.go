package rest

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// errorModel is the spec's IcebergErrorResponse: {"error": ErrorModel}.
type errorModel struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

func writeError(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, errorModel{Error: errorBody{Message: msg, Type: typ, Code: code}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false) // messages say <token>, not \u003ctoken\u003e
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		body.Reset()
		body.WriteString(`{"error":{"message":"cannot encode the response","type":"InternalServerError","code":500}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(body.Bytes())
}
