//go:build !race

package server_test

const raceBuild = false
