import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { lazyModule } from "../../src/internal/lazyModule.js"

describe("lazyModule", () => {
  it.effect("imports on first use, once; after that the module is at hand without an async step", () =>
    Effect.gen(function*() {
      let imports = 0
      const module = lazyModule(() => {
        imports++
        return import("../../src/internal/errors.js")
      })
      expect(imports).toBe(0)
      const first = yield* module
      expect(typeof first.withoutStackTrace).toBe("function")
      expect(yield* module).toBe(first)
      // Loaded: running it synchronously works, which a pending import would not allow.
      expect(Effect.runSync(module)).toBe(first)
      expect(imports).toBe(1)
    }))
})
