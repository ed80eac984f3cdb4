/**
 * The native SQLite task store: the shared contract, and what it must do
 * beside today's store on the same file (see sqlStores.ts).
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll } from "vitest"
import * as makeStore from "../../../../src/internal/server/store/makeStore.js"
import type * as internalTaskStore from "../../../../src/internal/server/store/taskStore.js"
import { sqlStoreSuite } from "./sqlStores.js"
import { taskStoreContract } from "./taskStores.js"

const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-a2a-sql-store-"))
afterAll(() => Fs.rmSync(directory, { recursive: true, force: true }))

const sqlite = (): internalTaskStore.DatabaseConfig => ({ _tag: "Sqlite", filename: Path.join(directory, "tasks.db") })

taskStoreContract("SQLite", () => makeStore.make(sqlite()))
sqlStoreSuite("SQLite", sqlite)
