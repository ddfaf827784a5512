module agentr1

go 1.26

require (
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	golang.org/x/sys v0.41.0 // indirect
)
