// A tiny app backend, as an app developer writes one: it verifies a user's access token with
// GET /v2/me and approves a payment with the server API key, retrying once when the platform
// answers 5xx. The tests beside it run it against a Plinth started by startPlinth().
export function createBackend({ apiBase, apiKey }) {
  const call = (method, path, authorization) =>
    fetch(`${apiBase}/v2${path}`, { method, headers: { authorization } }).then(async (response) => ({
      status: response.status,
      body: await response.json(),
    }))

  return {
    /** The signed-in user's uid and username, or null when the token is refused. */
    async whoIs(accessToken) {
      const me = await call('GET', '/me', `Bearer ${accessToken}`)
      return me.status === 200 ? { uid: me.body.uid, username: me.body.username } : null
    },
    /** Approves a payment; one retry on a 5xx, as the platform's docs advise. */
    async approve(paymentId) {
      for (let attempt = 1; ; attempt++) {
        const answer = await call('POST', `/payments/${paymentId}/approve`, `Key ${apiKey}`)
        if (answer.status < 500 || attempt === 2) return { ...answer, attempts: attempt }
      }
    },
  }
}
