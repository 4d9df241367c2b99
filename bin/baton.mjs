#!/usr/bin/env node
// Loads the TypeScript entry point through tsx in this same process, so `baton` works straight
// after `npm install` and signals reach the server directly.
import { register } from "tsx/esm/api"

register()
await import("../src/main.ts")
