module github.com/goagents/memorykit/adapters/openai

go 1.26.0

replace github.com/goagents/memorykit => ../..

require (
	github.com/benbjohnson/clock v1.3.5
	github.com/goagents/memorykit v0.0.0-00010101000000-000000000000
	github.com/openai/openai-go/v3 v3.102.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/kljensen/snowball v0.10.0 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	go.uber.org/zap v1.28.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)
