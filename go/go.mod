module github.com/slotlane/slotlane/go

go 1.23
