module sandlot.dev/otelcol

go 1.24
