import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

/**
 * The browser files (the SDK and the platform page) are served from `src/web/` as they are,
 * with no build step. Two levels up from this module is the project root both when it runs
 * from source (`src/web/`) and compiled (`dist/web/`).
 */
export function webDir(): string {
  const dir = fileURLToPath(new URL('../../src/web/', import.meta.url))
  if (!existsSync(`${dir}sdk/pi-sdk-core.js`)) throw new Error(`The browser files are missing from ${dir}`)
  return dir
}
