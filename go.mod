module github.com/cairnhq/cairn

go 1.26.0

replace github.com/google/pprof => github.com/google/pprof v0.0.0-20260906184651-6331bc6350fe
