package outbox_test

const relayChildEnv = "BANANAS_OUTBOX_TEST_RELAY"

func runRelayChild() {}
