/**
 * The durable runs of the native SQLite task store (see sqlDurables.ts).
 */
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll } from "vitest"
import type * as internalTaskStore from "../../../../src/internal/server/store/taskStore.js"
import { sqlDurableSuite } from "./sqlDurables.js"

const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "effect-a2a-sql-durable-"))
afterAll(() => Fs.rmSync(directory, { recursive: true, force: true }))

const sqlite = (): internalTaskStore.DatabaseConfig => ({ _tag: "Sqlite", filename: Path.join(directory, "tasks.db") })

sqlDurableSuite("SQLite", sqlite)
