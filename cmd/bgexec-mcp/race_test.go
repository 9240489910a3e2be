//go:build race

package main

// raceEnabled makes the tests build the server binary with -race too.
const raceEnabled = true
