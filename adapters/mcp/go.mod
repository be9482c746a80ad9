module github.com/goagents/memorykit/adapters/mcp

go 1.26.0

replace github.com/goagents/memorykit => ../..

require (
	github.com/goagents/memorykit v0.0.0-00010101000000-000000000000
	github.com/modelcontextprotocol/go-sdk v1.8.0
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.28.0
)

require (
	github.com/benbjohnson/clock v1.3.5 // indirect
	github.com/google/jsonschema-go v0.4.3 // indirect
	github.com/kljensen/snowball v0.10.0 // indirect
	github.com/mtibben/confusables v0.0.0-20210201002637-9d1b0723b659 // indirect
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)
