package cli

import (
	"crypto/rsa"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"

	"github.com/winnode/winnode/internal/bootstrap"
)

func newUserDataCommand(s Streams) *cobra.Command {
	var keyFile string
	cmd := &cobra.Command{
		Use:   "userdata --ssh-key FILE.pub",
		Short: "Print the user data script that prepares a Windows host for winnode",
		Long: `Print the user data script the operator generates (Secret windows-user-data,
key userData) for the given SSH key: PowerShell that installs and starts
OpenSSH Server, opens TCP 22 and 10250, authorizes the key for
Administrators and turns password logins off. Pass it as the user data of a
cloud instance, or run it once on a host you bring yourself.

--ssh-key takes the public key (OpenSSH .pub form); a private key file is
also accepted, and only its public half is used. Keys must be ed25519 or RSA
of at least 2048 bits, as the operator requires.`,
		Example: `  # User data for the key the operator uses
  winnodectl userdata --ssh-key ~/.ssh/winnode.pub > userdata.ps1

  # The same, from the private key kept in the cluster
  kubectl -n winnode-system get secret cloud-private-key \
    -o jsonpath='{.data.private-key\.pem}' | base64 -d > key.pem
  winnodectl userdata --ssh-key key.pem`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if keyFile == "" {
				return UsageErrorf("--ssh-key FILE.pub is required: the public key the host should accept")
			}
			data, err := os.ReadFile(keyFile)
			if err != nil {
				return fmt.Errorf("reading --ssh-key %s: %w", keyFile, err)
			}
			pub, err := parsePublicKey(data)
			if err != nil {
				return fmt.Errorf("--ssh-key %s: %w", keyFile, err)
			}
			script, err := bootstrap.UserData(pub)
			if err != nil {
				return err
			}
			_, err = s.Out.Write(script)
			return err
		},
	}
	cmd.Flags().StringVar(&keyFile, "ssh-key", "", "public key file (.pub) the host will accept (required)")
	return cmd
}

// minRSABits is the operator's minimum for RSA keys.
const minRSABits = 2048

// parsePublicKey reads an SSH public key in authorized_keys form, or the
// public half of an unencrypted private key (PEM or OpenSSH form), and
// refuses key types and sizes the operator refuses.
func parsePublicKey(data []byte) (ssh.PublicKey, error) {
	pub, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		signer, perr := ssh.ParsePrivateKey(data)
		var missing *ssh.PassphraseMissingError
		switch {
		case errors.As(perr, &missing):
			if missing.PublicKey == nil {
				return nil, errors.New("the private key is encrypted: pass its .pub file instead")
			}
			pub = missing.PublicKey
		case perr != nil:
			return nil, fmt.Errorf("neither an OpenSSH public key (\"ssh-ed25519 AAAA...\") nor a private key: %v", err)
		default:
			pub = signer.PublicKey()
		}
	}
	if err := checkKeyStrength(pub); err != nil {
		return nil, err
	}
	return pub, nil
}

// checkKeyStrength accepts what the operator accepts of a private key
// (sshkey.ParsePrivateKey): ed25519, and RSA of at least minRSABits bits.
func checkKeyStrength(pub ssh.PublicKey) error {
	switch pub.Type() {
	case ssh.KeyAlgoED25519:
		return nil
	case ssh.KeyAlgoRSA:
		ck, ok := pub.(ssh.CryptoPublicKey)
		if !ok {
			return errors.New("cannot read the RSA key's size")
		}
		rk, ok := ck.CryptoPublicKey().(*rsa.PublicKey)
		if !ok {
			return errors.New("cannot read the RSA key's size")
		}
		if bits := rk.N.BitLen(); bits < minRSABits {
			return fmt.Errorf("the RSA key has %d bits; the operator accepts RSA keys of at least %d bits (or ed25519): make a new one with ssh-keygen -t ed25519", bits, minRSABits)
		}
		return nil
	}
	return fmt.Errorf("the operator does not accept %s keys: use ed25519 (ssh-keygen -t ed25519) or RSA of at least %d bits", pub.Type(), minRSABits)
}
