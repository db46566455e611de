/* coord_mail: the in-process agent's mail, both ways: encoded messages queued and delivered from the loop by a
 * zero-delay timer, so that neither side's handler ever runs inside the other's (docs/design.md, "One code path for
 * one node or many"). Below coord_transport.c; calls up only through cs->local and cs->tr.ev. */
#include "launcher/coord/coord_priv.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"

static int s_on_mail(loop_t *loop, int id, void *arg);

/* Queues the encoded message buf[len] for the other side of this process (see struct local_mail). */
int coord_mail_post(coord_server_t *cs, int to_agent, const void *buf, size_t len)
{
    struct local_mail *mail = malloc(sizeof *mail + len);
    if (!mail)
        return -1;
    mail->next = NULL;
    mail->to_agent = to_agent;
    mail->len = len;
    memcpy(mail->data, buf, len);
    if (cs->tr.mail_tail)
        cs->tr.mail_tail->next = mail;
    else
        cs->tr.mail_head = mail;
    cs->tr.mail_tail = mail;
    if (cs->tr.mail_timer <= 0)
        cs->tr.mail_timer = loop_timer_after_ms(cs->loop, 0, s_on_mail, cs);
    return 0;
}

static int s_on_mail(loop_t *loop, int id, void *arg)
{
    coord_server_t *cs = arg;
    cs->tr.mail_timer = 0;
    struct local_mail *mail;
    while ((mail = cs->tr.mail_head) != NULL) {
        cs->tr.mail_head = mail->next;
        if (!cs->tr.mail_head)
            cs->tr.mail_tail = NULL;
        char err[256];
        wire_msg_t *m = wire_decode(mail->data, mail->len, mail->to_agent ? WIRE_TO_AGENT : WIRE_TO_COORD, err,
                                    sizeof err);
        if (m && mail->to_agent) {
            cs->local(cs->local_arg, m);
        } else if (m) {
            cs->peers[0].last_heard_ns = loop_now_ns();
            cs->tr.ev.on_message(cs, 0, m);
        } else {
            log_error("in-process message refused: %s", err);
        }
        wire_free(&m);
        free(mail);
    }
    return 0;
}

void coord_mail_free(coord_server_t *cs)
{
    if (cs->tr.mail_timer > 0)
        loop_timer_cancel(cs->loop, cs->tr.mail_timer);
    cs->tr.mail_timer = 0;
    while (cs->tr.mail_head) {
        struct local_mail *next = cs->tr.mail_head->next;
        free(cs->tr.mail_head);
        cs->tr.mail_head = next;
    }
    cs->tr.mail_tail = NULL;
}

int coord_mail_post_local(coord_server_t *cs, const wire_msg_t *m, char *err, size_t errlen)
{
    size_t len;
    void *buf = wire_encode_alloc(m, &len, err, errlen);
    if (!buf)
        return -1;
    int rc = coord_mail_post(cs, 0, buf, len);
    free(buf);
    if (rc < 0)
        snprintf(err, errlen, "out of memory");
    return rc;
}
