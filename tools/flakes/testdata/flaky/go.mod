module flaky

go 1.26
