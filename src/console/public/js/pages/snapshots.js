// @ts-check
// Snapshots: save the whole platform under a name, restore it, delete it, download it as a file
// and import a file (docs/testing.md, "Reset and snapshots").

import { confirmDialog } from '../../../../web/ui/dialogs.js'
import { h } from '../../../../web/ui/dom.js'
import { formatUtcTime } from '../../../../web/ui/format.js'
import { action, form } from '../../../../web/ui/forms.js'
import { table } from '../../../../web/ui/tables.js'
import { toast } from '../../../../web/ui/toast.js'
import { api, del, get, hasRoute, post, query, seg } from '../api.js'
import { refreshClock } from '../clock.js'
import { card, code, field, pageTitle } from '../parts.js'
import { render } from '../router.js'

const NAME = '^[a-z0-9][a-z0-9_\\-]{0,62}$'
const NAME_RULE = 'lower-case letters, digits, _ and -, starting with a letter or digit, at most 63 characters'

/** @param {string} name */
function checkName(name) {
  if (!new RegExp(NAME).test(name)) throw new Error(`A snapshot name is ${NAME_RULE} (got "${name}").`)
  return name
}

/** @param {number} bytes */
const size = (bytes) =>
  bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MB` : bytes >= 1024 ? `${Math.round(bytes / 1024)} KB` : `${bytes} B`

export async function snapshotsPage() {
  const [{ snapshots }, canExport, canImport] = await Promise.all([
    get('/sandbox/snapshots'),
    hasRoute('/sandbox/snapshots/{name}/export'),
    hasRoute('/sandbox/snapshots/import', 'post'),
  ])
  const save = form(
    { class: 'inline-form', 'data-testid': 'save-snapshot' },
    [
      field('Name', h('input', { name: 'name', required: true, maxlength: 63, pattern: NAME, placeholder: 'before-refunds' }), NAME_RULE),
      h('label', { class: 'switch' }, h('input', { type: 'checkbox', name: 'replace' }), 'Replace a snapshot of that name'),
      h('button', { type: 'submit', class: 'primary' }, 'Save snapshot'),
    ],
    /** @param {{ name: string, replace?: string }} values */
    async (values) => {
      const saved = await post('/sandbox/snapshots', { name: checkName(values.name.trim()), replace: values.replace === 'on' })
      await render()
      toast(`Saved ${saved.name} (${size(saved.bytes)}, ${Math.round(saved.took_ms)} ms)`)
    },
  )
  const rows = snapshots
    .slice()
    .reverse()
    .map((snapshot) =>
      h(
        'tr',
        { 'data-testid': 'snapshot-row', 'data-name': snapshot.name },
        h('td', {}, code(snapshot.name)),
        h('td', {}, formatUtcTime(snapshot.created_at)),
        h('td', { class: 'num' }, size(snapshot.bytes)),
        h(
          'td',
          { class: 'buttons' },
          action('Restore…', () => restore(snapshot.name), { kind: 'small primary', testid: 'restore-snapshot' }),
          canExport ? action('Download', () => download(snapshot.name), { kind: 'small', testid: 'download-snapshot' }) : null,
          action(
            'Delete',
            async () => {
              await del(`/sandbox/snapshots/${seg(snapshot.name)}`)
              await render()
              toast(`Deleted ${snapshot.name}`)
            },
            { kind: 'small danger', confirm: 'Click again to delete', testid: 'delete-snapshot' },
          ),
        ),
      ),
    )
  return [
    pageTitle(
      'Snapshots',
      'A snapshot holds the whole platform (apps, keys, users, payments, the ledger, the clock offset; not faults). Restore one to go back to it, as often as you like.',
    ),
    card('Save the platform now', null, save),
    card(
      `Saved snapshots (${snapshots.length})`,
      action('Refresh', render, { kind: 'small' }),
      table(['Name', 'Saved', 'Size', ''], rows, 'No snapshot saved yet.'),
    ),
    canImport ? importCard() : null,
  ]
}

/** @param {string} name */
async function restore(name) {
  const sure = await confirmDialog({
    title: `Restore ${name}?`,
    text: 'Everything on the platform now (apps, keys, users, payments, the ledger) is replaced by what was saved, and faults are cleared. Save a snapshot first to keep it.',
    confirm: 'Restore',
    testid: 'restore-dialog',
  })
  if (!sure) return
  const restored = await post(`/sandbox/snapshots/${seg(name)}/restore`)
  await refreshClock()
  await render()
  toast(`Restored ${restored.name} (${Math.round(restored.took_ms)} ms)`)
}

/**
 * Fetches the export (the admin token goes in a header, so no plain link) and saves it as a file.
 * @param {string} name
 */
async function download(name) {
  const file = await api('GET', `/sandbox/snapshots/${seg(name)}/export`)
  const url = URL.createObjectURL(new Blob([JSON.stringify(file)], { type: 'application/json' }))
  // Not through h(): a blob: URL is ours, not data's, and h() takes only http(s) links.
  const link = document.createElement('a')
  link.href = url
  link.download = `${name}.plinth-snapshot.json`
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(url), 60_000)
  toast(`Downloaded ${link.download}`)
}

function importCard() {
  const upload = form(
    { class: 'inline-form', 'data-testid': 'import-snapshot' },
    [
      field('Snapshot file', h('input', { type: 'file', name: 'file', accept: '.json,application/json', required: true })),
      field('Save as (optional)', h('input', { name: 'name', maxlength: 63, pattern: NAME, placeholder: 'the file’s own name' })),
      h('label', { class: 'switch' }, h('input', { type: 'checkbox', name: 'replace' }), 'Replace a snapshot of that name'),
      h('button', { type: 'submit', class: 'primary' }, 'Import'),
    ],
    /** @param {{ file: File, name: string, replace?: string }} values */
    async (values) => {
      const name = values.name.trim()
      if (name !== '') checkName(name)
      let body
      try {
        body = JSON.parse(await values.file.text())
      } catch {
        throw new Error(`${values.file.name} is not a snapshot file (it is not JSON).`)
      }
      const saved = await post(`/sandbox/snapshots/import${query({ name, replace: values.replace === 'on' ? 'true' : undefined })}`, body)
      await render()
      toast(`Imported ${saved.name}: restore it to use it`)
    },
  )
  return card(
    'Import a snapshot file',
    null,
    h(
      'p',
      { class: 'muted' },
      'A file downloaded here or by ',
      code('plinth snapshot export'),
      ', from this or another Plinth with the same schema.',
    ),
    upload,
  )
}
