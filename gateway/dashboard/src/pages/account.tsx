import { useState } from 'react';
import { unwrap } from '../api/client.ts';
import { Alert, Button, Card, Form, KeyValue, PageHeader } from '../components/ui.tsx';
import { useApi, useNotify, useSession } from '../context.tsx';
import { useAction, useDocumentTitle } from '../hooks.ts';
import { CheckedField, localError, newPasswordProblems, NewPasswordFields } from './auth.tsx';

/** Settings > Account: who is signed in, and changing the password (which signs out every other session). */
export function AccountPage() {
  useDocumentTitle('Account');
  const { session } = useSession();
  return (
    <>
      <PageHeader eyebrow="Settings" title="Account" description="Your sign-in details." />
      <div className="grid grid-2">
        <Card title="Signed in as">
          <KeyValue
            items={[
              ['Email', session.user.email],
              ['Account', session.account.name],
            ]}
          />
        </Card>
        <ChangePasswordCard />
      </div>
    </>
  );
}

function ChangePasswordCard() {
  const api = useApi();
  const notify = useNotify();
  const [currentPassword, setCurrent] = useState('');
  const [newPassword, setNew] = useState('');
  const [repeat, setRepeat] = useState('');
  const [done, setDone] = useState(false);
  const change = useAction(async () => {
    await unwrap(api.openapi.POST('/auth/password', { body: { currentPassword, newPassword } }));
    return true;
  });

  const submit = async () => {
    setDone(false);
    const local = localError({
      ...(!currentPassword ? { currentPassword: 'Enter your current password' } : {}),
      ...newPasswordProblems(newPassword, repeat),
    });
    if (local) return change.setError(local);
    if (await change.run()) {
      setCurrent('');
      setNew('');
      setRepeat('');
      setDone(true);
      notify('Password changed');
    }
  };

  const err = change.error;
  return (
    <Card title="Change password">
      {done && <Alert tone="success">Your password was changed. Every other session of yours was signed out; this one stays.</Alert>}
      <Form
        label="Change password"
        onSubmit={submit}
        pending={change.pending}
        error={err}
        fields={['currentPassword', 'newPassword', 'repeat']}
        actions={
          <Button type="submit" variant="primary" loading={change.pending}>
            Change password
          </Button>
        }
      >
        <CheckedField
          label="Current password"
          path="currentPassword"
          type="password"
          value={currentPassword}
          onChange={setCurrent}
          rule={(v) => (v ? undefined : 'Enter your current password')}
          action={change}
          autoComplete="current-password"
        />
        <NewPasswordFields
          password={newPassword}
          repeat={repeat}
          onPassword={setNew}
          onRepeat={setRepeat}
          action={change}
          hint="At least 10 characters. Other sessions are signed out."
        />
      </Form>
    </Card>
  );
}
