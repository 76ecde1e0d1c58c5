package main

import (
	"context"
	"log"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

func usedMemory(ctx context.Context, rc *redis.Client) int64 {
	info, err := rc.Info(ctx, "memory").Result()
	if err != nil {
		log.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}
