/* TLS identities and slots for HTTPS daemons (see CMicroHTTPDShims.h). */
#include "CMicroHTTPDShims.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct CMicroHTTPDShims_TLSIdentity {
    atomic_uint references;
    unsigned int chain_length;
    gnutls_datum_t *chain; /* DER, leaf first */
    gnutls_datum_t key;    /* unencrypted PKCS#8 DER */
    gnutls_x509_crt_t leaf;
};

struct CMicroHTTPDShims_TLSSlot {
    pthread_mutex_t lock;
    CMicroHTTPDShims_TLSIdentity *identity;
};

static void tls_error(char *error, size_t length, const char *what, int code) {
    if (error != NULL && length > 0) {
        snprintf(error, length, "%s: %s", what, gnutls_strerror(code));
    }
}

static void tls_identity_free(CMicroHTTPDShims_TLSIdentity *identity) {
    for (unsigned int i = 0; i < identity->chain_length; i++) {
        gnutls_free(identity->chain[i].data);
    }
    free(identity->chain);
    if (identity->key.data != NULL) {
        /* The key's bytes are wiped before they are freed. */
        gnutls_memset(identity->key.data, 0, identity->key.size);
        gnutls_free(identity->key.data);
    }
    if (identity->leaf != NULL) {
        gnutls_x509_crt_deinit(identity->leaf);
    }
    free(identity);
}

CMicroHTTPDShims_TLSIdentity *CMicroHTTPDShims_tls_identity_create(
    const uint8_t *certificate_pem, size_t certificate_length, const uint8_t *key_pem, size_t key_length,
    char *error, size_t error_length) {
    if (certificate_length > UINT32_MAX || key_length > UINT32_MAX) {
        snprintf(error, error_length, "certificate or key file too large");
        return NULL;
    }
    gnutls_datum_t certificate_text = {(unsigned char *)certificate_pem, (unsigned int)certificate_length};
    gnutls_datum_t key_text = {(unsigned char *)key_pem, (unsigned int)key_length};
    CMicroHTTPDShims_TLSIdentity *identity = calloc(1, sizeof(*identity));
    if (identity == NULL) {
        snprintf(error, error_length, "out of memory");
        return NULL;
    }
    atomic_init(&identity->references, 1);

    gnutls_x509_crt_t *certificates = NULL;
    unsigned int count = 0;
    int result = gnutls_x509_crt_list_import2(
        &certificates, &count, &certificate_text, GNUTLS_X509_FMT_PEM, GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
    if (result < 0 || count == 0) {
        tls_error(error, error_length, "certificate", result < 0 ? result : GNUTLS_E_NO_CERTIFICATE_FOUND);
        free(identity);
        return NULL;
    }
    identity->chain = calloc(count, sizeof(gnutls_datum_t));
    identity->chain_length = identity->chain == NULL ? 0 : count;
    for (unsigned int i = 0; i < count; i++) {
        if (identity->chain != NULL && result >= 0) {
            result = gnutls_x509_crt_export2(certificates[i], GNUTLS_X509_FMT_DER, &identity->chain[i]);
        }
        if (i == 0) {
            identity->leaf = certificates[0];
        } else {
            gnutls_x509_crt_deinit(certificates[i]);
        }
    }
    gnutls_free(certificates);
    if (identity->chain == NULL || result < 0) {
        tls_error(error, error_length, "certificate", result < 0 ? result : GNUTLS_E_MEMORY_ERROR);
        tls_identity_free(identity);
        return NULL;
    }

    gnutls_x509_privkey_t key = NULL;
    result = gnutls_x509_privkey_init(&key);
    if (result >= 0) {
        result = gnutls_x509_privkey_import2(key, &key_text, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN);
    }
    if (result >= 0) {
        result = gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_DER, NULL, GNUTLS_PKCS_PLAIN, &identity->key);
    }
    if (key != NULL) {
        gnutls_x509_privkey_deinit(key);
    }
    if (result < 0) {
        tls_error(error, error_length, "private key", result);
        tls_identity_free(identity);
        return NULL;
    }

    /* GnuTLS's own check that the key belongs to the leaf (and of the chain), as a server loading them would. */
    gnutls_certificate_credentials_t scratch = NULL;
    result = gnutls_certificate_allocate_credentials(&scratch);
    if (result >= 0) {
        result = gnutls_certificate_set_x509_key_mem2(
            scratch, &certificate_text, &key_text, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN);
        gnutls_certificate_free_credentials(scratch);
    }
    if (result < 0) {
        tls_error(error, error_length, "certificate and key", result);
        tls_identity_free(identity);
        return NULL;
    }
    return identity;
}

void CMicroHTTPDShims_tls_identity_release(CMicroHTTPDShims_TLSIdentity *identity) {
    if (identity != NULL && atomic_fetch_sub(&identity->references, 1) == 1) {
        tls_identity_free(identity);
    }
}

static CMicroHTTPDShims_TLSIdentity *tls_identity_retain(CMicroHTTPDShims_TLSIdentity *identity) {
    atomic_fetch_add(&identity->references, 1);
    return identity;
}

unsigned int CMicroHTTPDShims_tls_identity_chain_length(const CMicroHTTPDShims_TLSIdentity *identity) {
    return identity->chain_length;
}

int CMicroHTTPDShims_tls_identity_field(
    const CMicroHTTPDShims_TLSIdentity *identity, int field, char *buffer, size_t length) {
    if (length == 0) {
        return -1;
    }
    size_t size = length;
    int result;
    switch (field) {
    case 0:
        result = gnutls_x509_crt_get_dn(identity->leaf, buffer, &size);
        break;
    case 1:
        result = gnutls_x509_crt_get_issuer_dn(identity->leaf, buffer, &size);
        break;
    default: {
        unsigned char serial[64];
        size_t serial_size = sizeof(serial);
        result = gnutls_x509_crt_get_serial(identity->leaf, serial, &serial_size);
        if (result < 0 || serial_size * 2 + 1 > length) {
            return -1;
        }
        for (size_t i = 0; i < serial_size; i++) {
            snprintf(buffer + 2 * i, 3, "%02x", serial[i]);
        }
        buffer[serial_size * 2] = '\0';
        return 0;
    }
    }
    return result < 0 ? -1 : 0;
}

int64_t CMicroHTTPDShims_tls_identity_time(const CMicroHTTPDShims_TLSIdentity *identity, int which) {
    return (int64_t)(which == 0 ? gnutls_x509_crt_get_activation_time(identity->leaf)
                                : gnutls_x509_crt_get_expiration_time(identity->leaf));
}

CMicroHTTPDShims_TLSSlot *CMicroHTTPDShims_tls_slot_create(CMicroHTTPDShims_TLSIdentity *identity) {
    CMicroHTTPDShims_TLSSlot *slot = calloc(1, sizeof(*slot));
    if (slot == NULL) {
        return NULL;
    }
    pthread_mutex_init(&slot->lock, NULL);
    slot->identity = tls_identity_retain(identity);
    return slot;
}

void CMicroHTTPDShims_tls_slot_set(CMicroHTTPDShims_TLSSlot *slot, CMicroHTTPDShims_TLSIdentity *identity) {
    tls_identity_retain(identity);
    pthread_mutex_lock(&slot->lock);
    CMicroHTTPDShims_TLSIdentity *old = slot->identity;
    slot->identity = identity;
    pthread_mutex_unlock(&slot->lock);
    CMicroHTTPDShims_tls_identity_release(old);
}

void CMicroHTTPDShims_tls_slot_free(CMicroHTTPDShims_TLSSlot *slot) {
    if (slot == NULL) {
        return;
    }
    CMicroHTTPDShims_tls_identity_release(slot->identity);
    pthread_mutex_destroy(&slot->lock);
    free(slot);
}

/* The slot of the daemon whose worker runs on this thread. The certificate callback has no closure argument, and
 * from a handshake's session only libmicrohttpd's connection can be reached (its session pointer), not the daemon's
 * settings. Every connection is announced (MHD_CONNECTION_NOTIFY_STARTED) on the worker thread that accepted it,
 * which is the thread that later runs its handshake, and a worker thread belongs to one daemon for its whole life:
 * so the notification records the slot here and the callback reads it. */
static _Thread_local CMicroHTTPDShims_TLSSlot *thread_slot = NULL;

typedef struct {
    CMicroHTTPDShims_TLSSlot *slot;
    MHD_NotifyConnectionCallback forward;
    void *forward_cls;
} TLSNotify;

void CMicroHTTPDShims_tls_notify_connection(
    void *cls, struct MHD_Connection *connection, void **socket_context, enum MHD_ConnectionNotificationCode code) {
    TLSNotify *notify = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        thread_slot = notify->slot;
    }
    if (notify->forward != NULL) {
        notify->forward(notify->forward_cls, connection, socket_context, code);
    }
}

/* gnutls_certificate_retrieve_function3: a fresh copy of the slot's identity for this handshake, freed by GnuTLS. */
static int tls_retrieve(
    gnutls_session_t session, const struct gnutls_cert_retr_st *info, gnutls_pcert_st **certificates,
    unsigned int *certificate_count, gnutls_ocsp_data_st **ocsp, unsigned int *ocsp_count, gnutls_privkey_t *key,
    unsigned int *flags) {
    (void)session;
    (void)info;
    *ocsp = NULL;
    *ocsp_count = 0;
    CMicroHTTPDShims_TLSSlot *slot = thread_slot;
    if (slot == NULL) {
        return -1;
    }
    pthread_mutex_lock(&slot->lock);
    CMicroHTTPDShims_TLSIdentity *identity = tls_identity_retain(slot->identity);
    pthread_mutex_unlock(&slot->lock);

    int result = 0;
    unsigned int imported = 0;
    gnutls_privkey_t private_key = NULL;
    gnutls_pcert_st *chain = gnutls_malloc(identity->chain_length * sizeof(gnutls_pcert_st));
    if (chain == NULL) {
        result = -1;
    }
    for (; result == 0 && imported < identity->chain_length; imported++) {
        if (gnutls_pcert_import_x509_raw(&chain[imported], &identity->chain[imported], GNUTLS_X509_FMT_DER, 0) < 0) {
            result = -1;
            break;
        }
    }
    gnutls_x509_privkey_t x509_key = NULL;
    if (result == 0 && (gnutls_x509_privkey_init(&x509_key) < 0 ||
                        gnutls_x509_privkey_import_pkcs8(
                            x509_key, &identity->key, GNUTLS_X509_FMT_DER, NULL, GNUTLS_PKCS_PLAIN) < 0 ||
                        gnutls_privkey_init(&private_key) < 0)) {
        result = -1;
    }
    if (result == 0) {
        if (gnutls_privkey_import_x509(private_key, x509_key, GNUTLS_PRIVKEY_IMPORT_AUTO_RELEASE) < 0) {
            result = -1;
        } else {
            x509_key = NULL; /* owned by private_key now */
        }
    }
    CMicroHTTPDShims_tls_identity_release(identity);
    if (result != 0) {
        if (private_key != NULL) {
            gnutls_privkey_deinit(private_key);
        }
        if (x509_key != NULL) {
            gnutls_x509_privkey_deinit(x509_key);
        }
        for (unsigned int i = 0; i < imported; i++) {
            gnutls_pcert_deinit(&chain[i]);
        }
        gnutls_free(chain);
        return -1;
    }
    *certificates = chain;
    *certificate_count = imported;
    *key = private_key;
    *flags = GNUTLS_CERT_RETR_DEINIT_ALL;
    return 0;
}

void *CMicroHTTPDShims_tls_notify_create(
    CMicroHTTPDShims_TLSSlot *slot, MHD_NotifyConnectionCallback forward, void *forward_cls) {
    TLSNotify *notify = calloc(1, sizeof(*notify));
    if (notify != NULL) {
        notify->slot = slot;
        notify->forward = forward;
        notify->forward_cls = forward_cls;
    }
    return notify;
}

void *CMicroHTTPDShims_tls_retrieve_function(void) { return (void *)tls_retrieve; }

void CMicroHTTPDShims_tls_state_free(void *tls_state) { free(tls_state); }
