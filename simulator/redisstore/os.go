package redisstore

import "os"

var (
	osHostname = os.Hostname
	osPid      = os.Getpid
)
