/** The packages an install of the package at `root` brings: its dependencies and its peers not marked optional. */
export declare const requiredPackages: (root?: string) => ReadonlyArray<string>

/** Builds (unless `build` is false), packs and installs the package into a fresh folder with only what it requires. */
export declare const leanInstall: (options?: { readonly root?: string; readonly build?: boolean }) => {
  readonly app: string
  readonly packages: ReadonlyArray<string>
  readonly remove: () => void
}
