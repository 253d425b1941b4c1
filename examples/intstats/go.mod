module example.com/intstats

go 1.22
