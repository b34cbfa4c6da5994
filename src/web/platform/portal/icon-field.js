// @ts-check
/**
 * The portal's icon field of an app (registering it, editing its details): an image file read as a
 * data: URL the platform takes, with its preview and a Remove button.
 */

import { h } from '../../../web/ui/dom.js'
import { isIcon, uniqueId } from '../widgets.js'

/** The platform takes an icon of at most this many characters as a data: URL (about 36 KB of image). */
const MAX_ICON = 49_152

/**
 * Reads an image file as a data: URL, refusing what the platform would refuse.
 * @param {File} file
 * @returns {Promise<string>}
 */
function readIcon(file) {
  return new Promise((resolve, reject) => {
    if (!['image/png', 'image/jpeg', 'image/webp'].includes(file.type)) {
      return reject(new Error('The icon must be a PNG, JPEG or WebP image.'))
    }
    const reader = new FileReader()
    reader.onload = () => {
      const url = String(reader.result)
      if (url.length > MAX_ICON) reject(new Error('The icon is too large: at most about 36 KB.'))
      else resolve(url)
    }
    reader.onerror = () => reject(new Error('The icon could not be read.'))
    reader.readAsDataURL(file)
  })
}

/**
 * An icon field: a file input, a preview, and a button that removes it. `value()` is the data: URL, null (none) or undefined (unchanged).
 * @param {string | null | undefined} current
 * @param {import('../types').ProblemLine} problem
 */
export function iconField(current, problem) {
  const id = uniqueId('icon')
  /** @type {string | null | undefined} */
  let value
  const preview = h('img', { class: 'app-icon', alt: 'Icon preview', width: '40', height: '40', hidden: !isIcon(current) })
  if (typeof current === 'string' && isIcon(current)) preview.src = current
  const input = h('input', {
    id,
    type: 'file',
    accept: 'image/png,image/jpeg,image/webp',
    onchange: async () => {
      const file = input.files?.[0]
      if (file === undefined) return
      try {
        value = await readIcon(file)
        preview.src = value
        preview.hidden = false
        problem.set(undefined)
      } catch (error) {
        input.value = ''
        problem.set(error)
      }
    },
  })
  const remove = h(
    'button',
    {
      type: 'button',
      onclick: () => {
        value = null
        input.value = ''
        preview.removeAttribute('src')
        preview.hidden = true
      },
    },
    'Remove the icon',
  )
  return {
    nodes: [h('label', { for: id }, 'Icon (PNG, JPEG or WebP, at most about 36 KB)'), h('div', { class: 'row' }, preview, input, remove)],
    value: () => value,
  }
}
