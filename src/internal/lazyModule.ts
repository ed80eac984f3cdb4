/**
 * Internal modules loaded when a program first needs them rather than when
 * the public module that names them is imported: the index names every
 * public module, and a client that imports it should load only what it uses.
 *
 * @internal
 */
import * as Effect from "effect/Effect"

/** `load`'s module, imported on first use; after that at hand without waiting, as a static import would be. */
export const lazyModule = <M>(load: () => Promise<M>): Effect.Effect<M> => {
  let loaded: M | undefined
  return Effect.suspend(() =>
    loaded !== undefined ? Effect.succeed(loaded) : Effect.map(Effect.promise(load), (module) => (loaded = module))
  )
}
