package rest

import (
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
	body, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		body = []byte(`{"error":{"message":"cannot encode the response","type":"InternalServerError","code":500}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}
