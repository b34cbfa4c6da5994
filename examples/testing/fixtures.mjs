// What both suites share: a platform with a shop and a signed-in user, and a user's payment.
export async function shopWithUser(plinth) {
  const shop = await plinth.sandbox.apps.create('Example Shop')
  const user = await plinth.sandbox.users.create(`pioneer_${Math.random().toString(36).slice(2, 10)}`)
  const { accessToken } = await plinth.sandbox.authenticate(shop.app_id, user.user_id, ['username', 'payments'])
  return { shop, user, accessToken }
}

export async function userPayment(plinth, accessToken) {
  const response = await fetch(`${plinth.url}/v2/client/payments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ amount: 1, memo: 'example', metadata: {} }),
  })
  if (response.status !== 201) throw new Error(`create payment answered ${response.status}`)
  return (await response.json()).identifier
}
