package web

import (
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/agentcards/agentcards/web/openapi"
)

// openAPIDocument is the OpenAPI document of the REST door, built once from the catalogue and
// the error table (web/openapi).
var openAPIDocument = sync.OnceValues(func() ([]byte, error) { return openapi.JSON(ErrorCodes()) })

// ErrorCodes maps every error code the API answers to its status: the kinds of the table
// classify writes with, the codes of Echo's own errors, and internal.
func ErrorCodes() openapi.Errors {
	codes := openapi.Errors{"internal": http.StatusInternalServerError}
	for kind, status := range statuses {
		codes[string(kind)] = status
	}
	for status, code := range echoCodes {
		codes[code] = status
	}
	return codes
}

// openAPI serves the OpenAPI document.
func (h *handlers) openAPI(c echo.Context) error {
	doc, err := openAPIDocument()
	if err != nil {
		return err
	}
	// It changes only with the server's version.
	c.Response().Header().Set(echo.HeaderCacheControl, "public, max-age=300")
	return c.JSONBlob(http.StatusOK, doc)
}
