module libmentat_sqlite/go/mentat

go 1.19
